// The planner service's domain logic, in two halves that meet in a few
// named calls, over one TrialStore:
//   Studies (studies.h)  what PlannerService asks: submit, cancel, plan,
//                        predict, calibration files; the advancer thread
//                        that refits, re-ranks and runs successive halving.
//   Leases (leases.h)    what AgentService asks: agents, leasing (gangs,
//                        cluster probes), reports, rendezvous; the reaper.
// Studies open and close themselves for leasing (Leases::OpenStudy,
// CloseStudy, IsOpen); the lease side reaches the studies only through
// StudyDesk (study_desk.h), which Studies implements. Both tell watchers
// through StudyEvents (study_events.h) and read agents through
// agent_roster.h.
//
// Planner owns the two and starts them: after a restart the running trials'
// leases are extended by the outage (TrialStore::ForgiveOutage), the stored
// studies resume, and then the advancer and the reaper start.
//
//   TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Planner> planner,
//                            Planner::Create(store.get(), options));
//   TESSERA_ASSIGN_OR_RETURN(int64_t id,
//                            planner->studies().SubmitStudy(spec));
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "db/trial_store.h"
#include "service/leases.h"
#include "service/planner_options.h"
#include "service/studies.h"
#include "service/study_events.h"
#include "service/study_queries.h"

namespace tessera::service {

class Planner {
 public:
  // Checks the options, extends the running trials' leases by the time the
  // planner was down, resumes the store's studies, then starts the advancer
  // and (unless options.reaper_period is zero) the reaper. `store` must
  // outlive the planner.
  static absl::StatusOr<std::unique_ptr<Planner>> Create(
      db::TrialStore* store, PlannerOptions options);
  // Stops the reaper, then the advancer (the reaper's pass asks the
  // studies; an advance opens and closes studies for leasing).
  ~Planner();

  Planner(const Planner&) = delete;
  Planner& operator=(const Planner&) = delete;

  Studies& studies() { return studies_; }
  Leases& leases() { return leases_; }

 private:
  Planner(db::TrialStore* store, const PlannerOptions& options);

  const StudyQueries queries_;
  StudyEvents events_;
  // Each holds the other (leases_ through the StudyDesk): both are built
  // before either is used.
  Leases leases_;
  Studies studies_;
};

}  // namespace tessera::service
