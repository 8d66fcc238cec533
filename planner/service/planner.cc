// Planner: builds the two halves, resumes after a restart, starts and
// stops their threads.
#include "planner/service/planner.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

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
  // LeaseGraceAfterOutage from now to heartbeat again.
  const absl::Time now = options.clock ? options.clock() : absl::Now();
  absl::StatusOr<int64_t> extended =
      store->ForgiveOutage(now, now + LeaseGraceAfterOutage(options));
  if (!extended.ok()) return extended.status();
  if (*extended > 0) {
    options.log.Info(absl::StrCat(
        "restart: ", *extended,
        " running trial(s) keep their lease while their agents reconnect"));
  }
  std::unique_ptr<Planner> planner(new Planner(store, options));
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
