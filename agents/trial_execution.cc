#include "agents/trial_execution.h"

#include <atomic>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "agents/command_trial.h"
#include "agents/files.h"
#include "agents/process_runner.h"
#include "agents/rendezvous_relay.h"
#include "agents/result_assembly.h"
#include "agents/trial_command.h"
#include "core/trial_backend.h"
#include "core/trial_result.h"
#include "core/trial_time_budget.h"
#include "proto/assigned_trial.h"

namespace tessera::agents {
namespace {

// What a result the agent builds says about the trial.
TrialResult BaseResult(const AssignedTrial& t, absl::string_view backend) {
  const v1::TrialAssignment& a = t.wire;
  TrialResult r;
  r.backend = std::string(backend);
  r.model = t.model.ok()
                ? t.model->name
                : (a.model().preset().empty() ? "custom" : a.model().preset());
  if (t.layout.ok()) r.layout = *t.layout;
  r.ranks = a.world_size();
  r.global_batch = a.global_batch();
  r.seq_len = a.seq_len();
  r.warmup_steps = a.warmup_steps();
  return r;
}

// "ok 5120 tokens/s", or the status and the first line of the reason; the
// status in *status when given (nullopt for an unreadable result).
std::string Summarize(const std::string& json_text, bool* ok,
                      std::optional<TrialStatus>* status = nullptr) {
  *ok = false;
  nlohmann::json json = nlohmann::json::parse(json_text, nullptr, false);
  absl::StatusOr<TrialResult> r = json.is_discarded()
                                      ? absl::InvalidArgumentError("not JSON")
                                      : TrialResultFromJson(json);
  if (!r.ok()) return absl::StrCat("unreadable result: ", r.status().message());
  if (status != nullptr) *status = r->status;
  if (r->status == TrialStatus::kOk) {
    *ok = true;
    return absl::StrFormat("ok %.0f tokens/s", r->tokens_per_s);
  }
  std::string first_line(*absl::StrSplit(r->reason, '\n').begin());
  if (first_line.size() > 200) first_line = first_line.substr(0, 200) + "...";
  return absl::StrCat(TrialStatusName(r->status), ": ", first_line);
}

// The outcome that reports `result`.
TrialOutcome ResultOutcome(const TrialResult& result) {
  TrialOutcome outcome;
  outcome.result_json = TrialResultToJson(result).dump(
      2, ' ', false, nlohmann::json::error_handler_t::replace);
  std::optional<TrialStatus> status;
  outcome.summary = Summarize(outcome.result_json, &outcome.ok, &status);
  outcome.crash = status == TrialStatus::kCrash;
  return outcome;
}

// An outcome whose result the agent writes itself (nothing ran).
TrialOutcome AgentResult(TrialResult result, TrialStatus status,
                         absl::string_view reason) {
  result.status = status;
  result.reason = std::string(reason);
  return ResultOutcome(result);
}

}  // namespace

absl::Duration AgentTimeLimit(double time_limit_s, absl::Duration fallback) {
  // After tessera-trial's own watchdog (core/trial_time_budget.h).
  if (time_limit_s <= 0) return fallback;
  return TrialKillAfter(time_limit_s);
}

RunLimits LeaseRunLimits(double time_limit_s, const TrialExecutionOptions& o) {
  RunLimits limits;
  limits.time_limit = AgentTimeLimit(time_limit_s, o.default_time_limit);
  limits.kill_grace = o.kill_grace;
  limits.after_failure_grace = o.after_failure_grace;
  return limits;
}

TrialOutcome RunTrialAssignment(const AssignedTrial& t,
                                const TrialExecutionOptions& o,
                                const std::function<bool()>& should_stop) {
  const v1::TrialAssignment& a = t.wire;
  const std::string backend =
      a.backend().empty() ? o.default_backend : a.backend();
  const TrialResult base = BaseResult(t, backend);
  absl::StatusOr<std::string> dir = MakeUniqueDirectory(
      o.work_root, absl::StrCat("trial-", a.trial_id(), "-"));
  if (!dir.ok()) {
    // Not the trial's fault: this agent cannot run anything.
    return AgentResult(base, TrialStatus::kCrash,
                       absl::StrCat("agent: ", dir.status().message()));
  }
  absl::StatusOr<const TrialBackend*> kind = FindTrialBackend(backend);
  if (kind.ok() && (*kind)->launcher == TrialLauncher::kCommand) {
    CommandTrialRun run = RunCommandTrial(t, o, *dir, base, should_stop);
    TrialOutcome outcome;
    if (run.end == TrialEnd::kResult) {
      outcome = ResultOutcome(run.result);
    } else {
      outcome.end = run.end;
      outcome.summary = run.summary;
    }
    outcome.work_dir = *dir;
    return outcome;
  }
  TrialLaunchOptions launch_options;
  launch_options.trial_binary = o.trial_binary;
  launch_options.work_dir = *dir;
  launch_options.advertise_host = o.advertise_host;
  launch_options.default_backend = o.default_backend;
  absl::StatusOr<TrialLaunch> launch = BuildTrialLaunch(t, launch_options);
  if (!launch.ok()) {
    TrialOutcome outcome =
        AgentResult(base, TrialStatus::kInvalid, launch.status().message());
    outcome.work_dir = *dir;
    return outcome;
  }

  const RunLimits limits = LeaseRunLimits(a.time_limit_s(), o);
  RelayControl control;
  control.deadline = absl::Now() + limits.time_limit;
  RelayThread relay(launch->relay_rendezvous, launch->publishes_rendezvous,
                    o.planner, o.agent_id, a.trial_id(),
                    launch->rendezvous_file, control);
  std::vector<ProcessSpec> specs;
  for (const RankProcess& p : launch->processes) specs.push_back(p.spec);
  absl::StatusOr<std::vector<ProcessOutcome>> ran = RunProcesses(
      specs, limits,
      [&] { return (should_stop && should_stop()) || relay.Failed(); },
      o.registry);
  relay.Join();

  TrialOutcome outcome;
  const absl::Status relay_status = relay.status();
  if (IsLeaseGone(relay_status)) {
    outcome.end = TrialEnd::kLeaseGone;
    outcome.summary = absl::StrCat("lease gone: ", relay_status.message());
  } else if (should_stop && should_stop()) {
    outcome.end = TrialEnd::kStopped;
    outcome.summary = "stopped";
  } else if (!ran.ok()) {
    outcome = AgentResult(base, TrialStatus::kCrash,
                          absl::StrCat("agent: ", ran.status().message()));
  } else if (relay.Failed()) {
    outcome = AgentResult(
        base, TrialStatus::kCrash,
        absl::StrCat("agent: rendezvous relay: ", relay_status.message()));
  } else {
    std::vector<RankRun> runs;
    for (size_t i = 0; i < launch->processes.size(); ++i) {
      const RankProcess& p = launch->processes[i];
      runs.push_back(RankRun{p.local_rank, p.global_rank, (*ran)[i],
                             p.json_path, p.spec.stderr_path});
    }
    AssemblyOptions assembly;
    assembly.time_limit_s = absl::ToDoubleSeconds(limits.time_limit);
    outcome.result_json = AssembleTrialResult(runs, base, assembly);
    std::optional<TrialStatus> status;
    outcome.summary = Summarize(outcome.result_json, &outcome.ok, &status);
    outcome.crash = status == TrialStatus::kCrash;
    const std::optional<std::string> outside = OutsideKill(runs);
    if (outside.has_value() && status == TrialStatus::kCrash) {
      // Not the layout's fault: run it again rather than record a crash.
      outcome.end = TrialEnd::kInfrastructureFailure;
      outcome.summary = *outside;
    }
  }
  outcome.work_dir = *dir;
  return outcome;
}

}  // namespace tessera::agents
