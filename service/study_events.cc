#include "service/study_events.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "service/proto_mapping.h"

namespace tessera::service {

absl::StatusOr<v1::StudyEvent> StudyEvents::CurrentEvent(int64_t study_id) {
  TESSERA_ASSIGN_OR_RETURN(v1::StudySummary summary,
                           queries_->Summary(study_id));
  v1::StudyEvent event;
  const absl::StatusOr<db::StudyStatus> state =
      StudyStateFromProto(summary.state(), "state");
  event.set_message(absl::StrCat(
      "study ", study_id, " is ",
      state.ok() ? db::StudyStatusName(*state) : "unknown",
      summary.state_reason().empty() ? "" : ": ", summary.state_reason()));
  *event.mutable_study() = std::move(summary);
  event.set_unix_ms(UnixMillis(Now()));
  return event;
}

void StudyEvents::Emit(int64_t study_id, const std::string& message,
                       const db::Trial* trial) {
  log_.Info(absl::StrCat("study ", study_id, ": ", message));
  if (!hub_.HasSubscribers(study_id)) return;
  absl::StatusOr<v1::StudySummary> summary = queries_->Summary(study_id);
  if (!summary.ok()) return;
  v1::StudyEvent event;
  *event.mutable_study() = *std::move(summary);
  event.set_message(message);
  if (trial != nullptr) *event.mutable_trial() = TrialToProto(*trial);
  event.set_unix_ms(UnixMillis(Now()));
  hub_.Publish(event);
}

}  // namespace tessera::service
