#include "agents/result_assembly.h"

#include <signal.h>

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "agents/files.h"

namespace tessera::agents {
namespace {

// One process's JSON, read and checked.
struct Written {
  std::string text;                   // as the process wrote it
  std::optional<TrialResult> result;  // parsed; nullopt when absent or bad
  std::string problem;                // why there is none ("" when absent)
};

Written ReadResult(const std::string& path) {
  Written w;
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return w;  // never written
  nlohmann::json json = nlohmann::json::parse(*text, nullptr, false);
  if (json.is_discarded()) {
    w.problem = absl::StrCat("its result '", path, "' is not JSON");
    return w;
  }
  absl::StatusOr<TrialResult> result = TrialResultFromJson(json);
  if (!result.ok()) {
    w.problem = absl::StrCat("its result '", path,
                             "' is malformed: ", result.status().message());
    return w;
  }
  w.text = std::move(*text);
  w.result = std::move(*result);
  return w;
}

std::string Who(const RankRun& run) {
  return run.global_rank < 0
             ? std::string("tessera-trial")
             : absl::StrCat("tessera-trial rank ", run.global_rank,
                            " (local rank ", run.local_rank, ")");
}

// The result the agent writes for a process that left no usable JSON.
std::string BuiltResult(const RankRun& run, const Written& written,
                        const TrialResult& base,
                        const AssemblyOptions& options) {
  TrialResult r = base;
  r.steps = 0;
  const bool timed_out = run.outcome.kill == KillReason::kTimeLimit;
  r.status = timed_out ? TrialStatus::kTimeout : TrialStatus::kCrash;
  std::string how;
  switch (run.outcome.kill) {
    case KillReason::kTimeLimit:
      how = absl::StrCat("killed by the agent at the time limit of ",
                         options.time_limit_s, " s");
      break;
    case KillReason::kStopped:
      how = "killed by the agent (stopped)";
      break;
    case KillReason::kPeerFailed:
      how = "killed by the agent after another rank failed";
      break;
    case KillReason::kNone:
      how = run.outcome.exit.Describe();
      break;
  }
  r.reason = absl::StrCat(
      Who(run), " ", how, " without a result",
      written.problem.empty() ? "" : absl::StrCat(" (", written.problem, ")"));
  const std::string tail =
      ReadFileTail(run.stderr_path, options.stderr_tail_bytes);
  if (!tail.empty()) absl::StrAppend(&r.reason, "; stderr tail:\n", tail);
  // Invalid UTF-8 in the tail (a cut character, binary noise) becomes
  // U+FFFD rather than an exception.
  return TrialResultToJson(r).dump(2, ' ', false,
                                   nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string AssembleTrialResult(const std::vector<RankRun>& unsorted,
                                const TrialResult& base,
                                const AssemblyOptions& options) {
  std::vector<RankRun> runs = unsorted;
  std::sort(runs.begin(), runs.end(), [](const RankRun& a, const RankRun& b) {
    return a.local_rank < b.local_rank;
  });
  std::vector<Written> written;
  for (const RankRun& run : runs) written.push_back(ReadResult(run.json_path));

  // Index of the first process (by local rank) for which pred(i) holds.
  const auto first = [&](auto pred) -> std::optional<size_t> {
    for (size_t i = 0; i < runs.size(); ++i) {
      if (pred(i)) return i;
    }
    return std::nullopt;
  };
  const auto status = [&](size_t i) -> std::optional<TrialStatus> {
    if (!written[i].result.has_value()) return std::nullopt;
    return written[i].result->status;
  };
  const auto not_ok = [&](size_t i) { return status(i) != TrialStatus::kOk; };
  const auto typed_failure = [&](size_t i) {
    return status(i).has_value() && status(i) != TrialStatus::kOk &&
           status(i) != TrialStatus::kCrash;
  };
  const auto crash_json = [&](size_t i) {
    return status(i) == TrialStatus::kCrash;
  };
  const auto no_json = [&](size_t i) { return !status(i).has_value(); };
  const auto no_json_killed = [&](KillReason why) {
    return [&, why](size_t i) {
      return no_json(i) && runs[i].outcome.kill == why;
    };
  };

  if (!runs.empty() && !first(not_ok)) return written[0].text;
  if (auto i = first(typed_failure)) return written[*i].text;
  if (auto i = first(no_json_killed(KillReason::kNone))) {
    return BuiltResult(runs[*i], written[*i], base, options);
  }
  if (auto i = first(no_json_killed(KillReason::kTimeLimit))) {
    return BuiltResult(runs[*i], written[*i], base, options);
  }
  if (auto i = first(crash_json)) return written[*i].text;
  if (auto i = first(no_json)) {
    return BuiltResult(runs[*i], written[*i], base, options);
  }
  // No process at all.
  TrialResult r = base;
  r.status = TrialStatus::kCrash;
  r.reason = "no tessera-trial process ran";
  return TrialResultToJson(r).dump(2);
}

std::optional<std::string> OutsideKill(const std::vector<RankRun>& unsorted) {
  std::vector<RankRun> runs = unsorted;
  std::sort(runs.begin(), runs.end(), [](const RankRun& a, const RankRun& b) {
    return a.local_rank < b.local_rank;
  });
  for (const RankRun& run : runs) {
    std::optional<std::string> killed =
        KilledFromOutside(run.outcome, Who(run));
    if (killed.has_value()) return killed;
  }
  return std::nullopt;
}

std::optional<std::string> KilledFromOutside(const ProcessOutcome& outcome,
                                             absl::string_view who) {
  const ExitStatus& exit = outcome.exit;
  if (outcome.kill != KillReason::kNone || exit.exited) return std::nullopt;
  if (exit.signal == SIGKILL || exit.signal == SIGTERM ||
      exit.signal == SIGINT || exit.signal == SIGHUP) {
    return absl::StrCat(who, " ", exit.Describe(),
                        ", a signal neither it nor the agent sent");
  }
  return std::nullopt;
}

}  // namespace tessera::agents
