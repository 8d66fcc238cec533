// Planner: builds the two halves, resumes after a restart, starts and
// stops their threads.
#include "service/planner.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/status_macros.h"
#include "service/fleet_pace.h"

namespace tessera::service {

Planner::Planner(db::TrialStore* store, const PlannerOptions& options)
    : queries_(store),
      events_(&queries_, options.log, options.clock),
      leases_(store, options, &events_, &studies_),
      studies_(store, options, &queries_, &events_, &leases_) {}

absl::StatusOr<std::unique_ptr<Planner>> Planner::Create(
    db::TrialStore* store, PlannerOptions options) {
  if (store == nullptr) {
    return absl::InvalidArgumentError("planner: a store is needed");
  }
  if (options.lease_timeout <= absl::ZeroDuration() ||
      options.heartbeat_interval <= absl::ZeroDuration() ||
      options.lease_poll_interval <= absl::ZeroDuration() ||
      options.agent_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "planner: heartbeat interval, lease poll interval, lease timeout and "
        "agent timeout must be positive");
  }
  // The time it was down counts against no running trial: their agents get
  // LeaseGraceAfterOutage, at the pace of the fleet the store knows, from
  // now to heartbeat again.
  const absl::Time now = options.clock ? options.clock() : absl::Now();
  absl::StatusOr<std::vector<db::Agent>> fleet =
      store->ListAgents(db::AgentState::kActive);
  if (!fleet.ok()) return fleet.status();
  FleetPace pace(options);
  absl::StatusOr<int64_t> extended = store->ForgiveOutage(
      now,
      now + LeaseGraceAfterOutage(pace.Tell(
                static_cast<int64_t>(fleet->size()), now)));
  if (!extended.ok()) return extended.status();
  if (*extended > 0) {
    options.log.Info(absl::StrCat(
        "restart: ", *extended,
        " running trial(s) keep their lease while their agents reconnect"));
  }
  std::unique_ptr<Planner> planner(new Planner(store, options));
  // Liveness starts from the agents the store has active, each heard now.
  TESSERA_RETURN_IF_ERROR(planner->leases_.LoadAgents());
  planner->studies_.ResumeStudies();
  planner->studies_.StartAdvancer();
  planner->leases_.StartReaper();
  return planner;
}

Planner::~Planner() {
  leases_.StopReaper();
  studies_.StopAdvancer();
}

}  // namespace tessera::service
