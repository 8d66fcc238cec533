// What happens to a study, told twice: one line in the planner's log and,
// when someone watches the study (WatchStudy), an event with the study's
// summary as it stands (and the trial the event is about). Both sides of the
// planner tell through it: the studies (submitted, queued, recalibrated,
// done) and the leases (leased, reported, re-queued).
//
//   StudyEvents events(&queries, options.log, options.clock);
//   events.Emit(study_id, "trial 7 leased to a1", &trial);
//   int64_t id = events.hub().Subscribe(study_id, sink);
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "db/trial_store.h"
#include "service/event_hub.h"
#include "service/log.h"
#include "service/study_queries.h"
#include "tessera/v1/service.pb.h"

namespace tessera::service {

class StudyEvents {
 public:
  // `queries` must outlive this; `clock` empty: absl::Now.
  StudyEvents(const StudyQueries* queries, Log log, db::Clock clock)
      : queries_(queries), log_(log), clock_(std::move(clock)) {}

  // Logs "study N: message" and, when the study has watchers, publishes
  // the event (a summary that cannot be read is not published).
  void Emit(int64_t study_id, const std::string& message,
            const db::Trial* trial = nullptr);
  // The event a watcher gets first: the study as it stands ("study 3 is
  // running"); NOT_FOUND for an unknown study.
  absl::StatusOr<v1::StudyEvent> CurrentEvent(int64_t study_id);

  EventHub& hub() { return hub_; }

 private:
  absl::Time Now() const { return clock_ ? clock_() : absl::Now(); }

  const StudyQueries* const queries_;
  const Log log_;
  const db::Clock clock_;
  EventHub hub_;
};

}  // namespace tessera::service
