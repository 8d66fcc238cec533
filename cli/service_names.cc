#include "cli/service_names.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/layout.h"
#include "proto/convert.h"

namespace tessera::cli {
namespace {

constexpr std::pair<v1::StudyState, absl::string_view> kStudyStates[] = {
    {v1::STUDY_QUEUED, "queued"}, {v1::STUDY_RUNNING, "running"},
    {v1::STUDY_DONE, "done"},     {v1::STUDY_CANCELLED, "cancelled"},
    {v1::STUDY_FAILED, "failed"},
};

constexpr std::pair<v1::TrialState, absl::string_view> kTrialStates[] = {
    {v1::TRIAL_QUEUED, "queued"},
    {v1::TRIAL_LEASED, "running"},
    {v1::TRIAL_OK, "ok"},
    {v1::TRIAL_OOM, "oom"},
    {v1::TRIAL_NAN, "nan"},
    {v1::TRIAL_TIMEOUT, "timeout"},
    {v1::TRIAL_CRASH, "crash"},
    {v1::TRIAL_INVALID, "invalid"},
    {v1::TRIAL_CANCELLED, "cancelled"},
};

constexpr v1::TrialState kFailedStates[] = {v1::TRIAL_OOM, v1::TRIAL_NAN,
                                            v1::TRIAL_TIMEOUT, v1::TRIAL_CRASH,
                                            v1::TRIAL_INVALID};

// The states one word of a --state list stands for; empty when unknown.
std::vector<v1::TrialState> TrialStatesOf(const std::string& word) {
  if (word == "failed") {
    return {std::begin(kFailedStates), std::end(kFailedStates)};
  }
  if (word == "done") {
    std::vector<v1::TrialState> done = {v1::TRIAL_OK};
    done.insert(done.end(), std::begin(kFailedStates), std::end(kFailedStates));
    return done;
  }
  if (word == "leased") return {v1::TRIAL_LEASED};
  for (const auto& [state, name] : kTrialStates) {
    if (word == name ||
        word == absl::AsciiStrToLower(v1::TrialState_Name(state))) {
      return {state};
    }
  }
  return {};
}

}  // namespace

absl::string_view StudyStateName(v1::StudyState state) {
  for (const auto& [s, name] : kStudyStates) {
    if (s == state) return name;
  }
  return "unknown";
}

absl::StatusOr<v1::StudyState> ParseStudyState(absl::string_view text) {
  const std::string word = absl::AsciiStrToLower(text);
  std::vector<std::string> names;
  for (const auto& [state, name] : kStudyStates) {
    if (word == name ||
        word == absl::AsciiStrToLower(v1::StudyState_Name(state))) {
      return state;
    }
    names.emplace_back(name);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown study state '", text,
                   "' (states: ", absl::StrJoin(names, ", "), ")"));
}

bool IsFinal(v1::StudyState state) {
  return state == v1::STUDY_DONE || state == v1::STUDY_CANCELLED ||
         state == v1::STUDY_FAILED;
}

absl::string_view TrialStateName(v1::TrialState state) {
  for (const auto& [s, name] : kTrialStates) {
    if (s == state) return name;
  }
  return "unknown";
}

absl::StatusOr<std::vector<v1::TrialState>> ParseTrialStates(
    absl::string_view text) {
  std::vector<v1::TrialState> states;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    const std::string word =
        absl::AsciiStrToLower(absl::StripAsciiWhitespace(part));
    const std::vector<v1::TrialState> these = TrialStatesOf(word);
    if (these.empty()) {
      std::vector<std::string> names;
      for (const auto& [state, name] : kTrialStates) names.emplace_back(name);
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown trial state '", part,
          "' (states: ", absl::StrJoin(names, ", "), "; failed, done)"));
    }
    for (v1::TrialState s : these) {
      if (std::find(states.begin(), states.end(), s) == states.end()) {
        states.push_back(s);
      }
    }
  }
  return states;
}

absl::string_view ProvenanceName(v1::Provenance provenance) {
  switch (provenance) {
    case v1::MEASURED:
      return "MEASURED";
    case v1::PREDICTED:
      return "PREDICTED";
    default:
      return "UNKNOWN";
  }
}

std::string LayoutRecompute(const v1::Layout& layout) {
  return layout.recompute().empty() ? "none" : layout.recompute();
}

std::string CompactLayout(const v1::Layout& l) {
  std::vector<std::string> parts;
  auto degree = [&](absl::string_view key, int64_t value) {
    if (value > 1) parts.push_back(absl::StrCat(key, "=", value));
  };
  degree("tp", l.tp());
  if (l.sp()) parts.push_back("sp=1");
  degree("pp", l.pp());
  degree("vpp", l.vpp());
  degree("cp", l.cp());
  parts.push_back(absl::StrCat("dp=", l.dp()));
  if (l.zero() > 0) parts.push_back(absl::StrCat("zero=", l.zero()));
  // A shard group as large as dp is plain ZeRO/FSDP: not worth a word.
  if (l.shard_group() > 0 && l.shard_group() != l.dp() && l.zero() > 0) {
    parts.push_back(absl::StrCat("shard_group=", l.shard_group()));
  }
  parts.push_back(
      absl::StrCat("micro_batch=", std::max<int64_t>(1, l.micro_batch())));
  if (l.grad_accum() > 0) {
    parts.push_back(absl::StrCat("grad_accum=", l.grad_accum()));
  }
  if (LayoutRecompute(l) != "none") {
    parts.push_back(absl::StrCat("recompute=", l.recompute()));
  }
  return absl::StrJoin(parts, ",");
}

std::string FullLayout(const v1::Layout& layout) {
  absl::StatusOr<Layout> parsed = LayoutFromProto(layout);
  return parsed.ok() ? FormatLayout(*parsed) : CompactLayout(layout);
}

}  // namespace tessera::cli
