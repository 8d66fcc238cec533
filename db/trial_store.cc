#include "db/trial_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tessera::db {
namespace {

// Finds `text` among `names` (value, name pairs) or says what was expected.
template <typename Enum, size_t N>
absl::StatusOr<Enum> ParseName(const std::pair<Enum, const char*> (&names)[N],
                               absl::string_view field,
                               absl::string_view text) {
  std::vector<std::string> expected;
  for (const auto& [value, name] : names) {
    if (text == name) return value;
    expected.emplace_back(name);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": '", text, "' is not one of ", absl::StrJoin(expected, ", ")));
}

template <typename Enum, size_t N>
absl::string_view NameOf(const std::pair<Enum, const char*> (&names)[N],
                         Enum value) {
  for (const auto& [v, name] : names) {
    if (v == value) return name;
  }
  return "unknown";
}

constexpr std::pair<StudyStatus, const char*> kStudyStatusNames[] = {
    {StudyStatus::kQueued, "queued"}, {StudyStatus::kRunning, "running"},
    {StudyStatus::kDone, "done"},     {StudyStatus::kCancelled, "cancelled"},
    {StudyStatus::kFailed, "failed"},
};

constexpr std::pair<TrialState, const char*> kTrialStateNames[] = {
    {TrialState::kQueued, "queued"},
    {TrialState::kLeased, "leased"},
    {TrialState::kOk, "ok"},
    {TrialState::kOom, "oom"},
    {TrialState::kNan, "nan"},
    {TrialState::kTimeout, "timeout"},
    {TrialState::kCrash, "crash"},
    {TrialState::kInvalid, "invalid"},
    {TrialState::kCancelled, "cancelled"},
};

constexpr std::pair<AgentState, const char*> kAgentStateNames[] = {
    {AgentState::kActive, "active"},
    {AgentState::kGone, "gone"},
};

}  // namespace

absl::string_view StudyStatusName(StudyStatus status) {
  return NameOf(kStudyStatusNames, status);
}

absl::StatusOr<StudyStatus> ParseStudyStatus(absl::string_view text) {
  return ParseName(kStudyStatusNames, "study.status", text);
}

bool IsFinal(StudyStatus status) {
  return status == StudyStatus::kDone || status == StudyStatus::kCancelled ||
         status == StudyStatus::kFailed;
}

absl::string_view TrialStateName(TrialState state) {
  return NameOf(kTrialStateNames, state);
}

absl::StatusOr<TrialState> ParseTrialState(absl::string_view text) {
  return ParseName(kTrialStateNames, "trial.status", text);
}

bool IsFinal(TrialState state) {
  return state != TrialState::kQueued && state != TrialState::kLeased;
}

TrialState StateOfResult(TrialStatus status) {
  switch (status) {
    case TrialStatus::kOk:
      return TrialState::kOk;
    case TrialStatus::kOom:
      return TrialState::kOom;
    case TrialStatus::kNan:
      return TrialState::kNan;
    case TrialStatus::kTimeout:
      return TrialState::kTimeout;
    case TrialStatus::kCrash:
      return TrialState::kCrash;
    case TrialStatus::kInvalid:
      return TrialState::kInvalid;
  }
  return TrialState::kCrash;
}

const std::vector<TrialState>& AllTrialStates() {
  static const auto* states = [] {
    auto* v = new std::vector<TrialState>;
    for (const auto& [state, name] : kTrialStateNames) v->push_back(state);
    return v;
  }();
  return *states;
}

const std::vector<std::string>& TrialSortKeys() {
  static const auto* keys = new std::vector<std::string>{
      "id",
      "created_at",
      "finished_at",
      "rung",
      "attempts",
      "tokens_per_s",
      "tokens_per_s_per_gpu",
      "tokens_per_joule",
      "step_time_s",
      "tflops_per_gpu",
      "mfu",
      "peak_memory_bytes",
      "watts_per_gpu",
      "exposed_comm_s",
      "predicted_tokens_per_s",
      "predicted_tokens_per_joule",
      "predicted_step_time_s",
  };
  return *keys;
}

absl::string_view AgentStateName(AgentState state) {
  return NameOf(kAgentStateNames, state);
}

absl::StatusOr<AgentState> ParseAgentState(absl::string_view text) {
  return ParseName(kAgentStateNames, "agent.state", text);
}

std::string StudyScope(int64_t study_id) {
  return absl::StrCat("study:", study_id);
}

std::string GpuScope(absl::string_view gpu) {
  return absl::StrCat("gpu:", gpu);
}

}  // namespace tessera::db
