#include "agents/command_trial.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agents/command_launch.h"
#include "agents/command_metrics.h"
#include "agents/command_policy.h"
#include "agents/files.h"
#include "agents/rendezvous_relay.h"
#include "agents/result_assembly.h"
#include "core/model_flops.h"
#include "core/trial_backend.h"
#include "proto/convert.h"

namespace tessera::agents {
namespace {

// How much of the command's output the agent reads back (a framework's log
// is parsed from it) and keeps in the result.
constexpr int64_t kOutputReadBytes = 4 << 20;
constexpr int64_t kOutputTailBytes = 2048;

std::string Tail(const std::string& text, int64_t bytes) {
  if (static_cast<int64_t>(text.size()) <= bytes) return text;
  std::string tail = text.substr(text.size() - bytes);
  // Start at a line.
  const size_t newline = tail.find('\n');
  if (newline != std::string::npos && newline + 1 < tail.size()) {
    tail = tail.substr(newline + 1);
  }
  return tail;
}

// The line of `text` that best says why it failed, at most 300 bytes: the
// last that names an error ("RuntimeError: ...", "error: ..."; not a
// launcher's own ChildFailedError summary), else the last with a letter or
// digit in it.
std::string LastLine(absl::string_view text) {
  std::vector<absl::string_view> lines =
      absl::StrSplit(text, '\n', absl::SkipWhitespace());
  absl::string_view chosen;
  for (absl::string_view line : lines) {
    if (std::any_of(line.begin(), line.end(), [](char c) {
          return absl::ascii_isalnum(static_cast<unsigned char>(c));
        })) {
      chosen = line;
    }
  }
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    const bool names_error = absl::StrContains(*it, "Error: ") ||
                             absl::StrContains(*it, "error: ") ||
                             absl::StrContains(*it, "Exception: ");
    if (names_error && !absl::StrContains(*it, "ChildFailedError")) {
      chosen = *it;
      break;
    }
  }
  std::string line(absl::StripAsciiWhitespace(chosen));
  if (line.size() > 300) line = line.substr(0, 300) + "...";
  return line;
}

TrialResult Failed(TrialResult r, TrialStatus status, std::string reason) {
  r.status = status;
  r.reason = std::move(reason);
  return r;
}

// Why a command that exited badly failed: its exit and its last words.
std::string ExitReason(const CommandEnd& end) {
  const ExitStatus& exit = end.process.exit;
  std::string reason = absl::StrCat("the command ended with ", exit.Describe());
  if (exit.exited && exit.exit_code == 127) {
    absl::StrAppend(&reason, " (command not found)");
  } else if (exit.exited && exit.exit_code == 126) {
    absl::StrAppend(&reason, " (not executable)");
  }
  const std::string last = LastLine(end.stderr_text).empty()
                               ? LastLine(end.stdout_text)
                               : LastLine(end.stderr_text);
  if (!last.empty()) absl::StrAppend(&reason, ": ", last);
  return reason;
}

}  // namespace

TrialResult ResultOfCommand(const AssignedTrial& t, const CommandEnd& end,
                            TrialResult r) {
  const v1::TrialAssignment& a = t.wire;
  r.output_tail = absl::StrCat(Tail(end.stdout_text, kOutputTailBytes / 2),
                               end.stderr_text.empty() ? "" : "\n[stderr]\n",
                               Tail(end.stderr_text, kOutputTailBytes / 2));
  // The steps it reported, from the metrics file, else its log.
  CommandMetrics metrics;
  absl::Status metrics_error;
  if (end.metrics_file && !end.metrics_text.empty()) {
    absl::StatusOr<CommandMetrics> parsed =
        ParseMetricsJsonLines(end.metrics_text);
    if (parsed.ok()) {
      metrics = *std::move(parsed);
    } else {
      metrics_error = parsed.status();
    }
  } else {
    LogContext context;
    context.tokens_per_step = a.global_batch() * a.seq_len();
    context.world_size = std::max<int64_t>(a.world_size(), 1);
    absl::StatusOr<CommandMetrics> parsed = ParseFrameworkLog(
        absl::StrCat(end.stdout_text, "\n", end.stderr_text), context);
    if (parsed.ok()) metrics = *std::move(parsed);
  }
  for (const CommandStep& s : metrics.steps) {
    r.loss.push_back(s.loss.value_or(std::nan("")));
    r.step_times_s.push_back(s.step_time_s);
  }
  const int64_t warmup = a.warmup_steps();
  const int64_t reported = static_cast<int64_t>(metrics.steps.size());
  r.steps = std::max<int64_t>(reported - warmup, 0);
  const auto non_finite_loss = [&]() -> std::optional<int64_t> {
    for (const CommandStep& s : metrics.steps) {
      if (s.loss.has_value() && !std::isfinite(*s.loss)) return s.step;
    }
    return std::nullopt;
  };

  if (end.process.kill == KillReason::kTimeLimit) {
    return Failed(
        std::move(r), TrialStatus::kTimeout,
        absl::StrFormat("ran past the trial's time limit of %g s "
                        "(%d of %d steps reported); the command and "
                        "every process it started were killed",
                        a.time_limit_s(), reported, warmup + a.steps()));
  }
  if (!end.process.exit.success()) {
    const std::string output = absl::StrCat(
        Tail(end.stdout_text, 64 << 10), "\n", Tail(end.stderr_text, 64 << 10));
    std::optional<TrialStatus> typed = FailureStatusOfOutput(output);
    if (!typed.has_value() && non_finite_loss().has_value()) {
      typed = TrialStatus::kNan;
    }
    return Failed(std::move(r), typed.value_or(TrialStatus::kCrash),
                  ExitReason(end));
  }
  if (!metrics_error.ok()) {
    return Failed(
        std::move(r), TrialStatus::kCrash,
        absl::StrCat("malformed $TESSERA_METRICS: ", metrics_error.message()));
  }
  if (reported == 0) {
    return Failed(std::move(r), TrialStatus::kCrash,
                  "the command exited 0 but reported no steps: no "
                  "$TESSERA_METRICS lines, and no torchtitan or Megatron-LM "
                  "step lines in its output");
  }
  if (std::optional<int64_t> step = non_finite_loss(); step.has_value()) {
    return Failed(std::move(r), TrialStatus::kNan,
                  absl::StrCat("the loss is not finite at step ", *step));
  }
  if (r.steps < a.steps()) {
    return Failed(std::move(r), TrialStatus::kCrash,
                  absl::StrCat("the command exited 0 after reporting ",
                               reported, " steps; ", warmup, " warm-up + ",
                               a.steps(), " measured were asked for"));
  }

  // Measured: every step after the warm-up ones.
  std::vector<double> measured_s;
  int64_t tokens = a.global_batch() * a.seq_len();
  int64_t peak = 0;
  for (int64_t i = warmup; i < reported; ++i) {
    const CommandStep& s = metrics.steps[i];
    measured_s.push_back(s.step_time_s);
    if (s.tokens.has_value() && *s.tokens > 0) tokens = *s.tokens;
    if (s.peak_memory_bytes.has_value()) {
      peak = std::max(peak, *s.peak_memory_bytes);
    }
  }
  r.status = TrialStatus::kOk;
  r.reason.clear();
  r.step_time_s = StepTimeStatsOf(measured_s);
  const double ranks = static_cast<double>(std::max<int64_t>(r.ranks, 1));
  if (r.step_time_s.median > 0) {
    r.tokens_per_s = static_cast<double>(tokens) / r.step_time_s.median;
    r.tokens_per_s_per_gpu = r.tokens_per_s / ranks;
    if (t.model.ok()) {
      r.tflops_per_gpu =
          ModelFlopsPerStep(*t.model, a.global_batch(), a.seq_len()) /
          r.step_time_s.median / ranks / 1e12;
    }
  }
  if (peak > 0) r.peak_memory_bytes = {peak};
  if (end.energy.has_value() && end.gpus > 0) {
    r.watts_per_gpu = end.energy->joules / end.energy->seconds /
                      static_cast<double>(end.gpus);
    r.tokens_per_joule =
        static_cast<double>(tokens * r.steps) / end.energy->joules;
  }
  return r;
}

CommandTrialRun RunCommandTrial(const AssignedTrial& t,
                                const TrialExecutionOptions& o,
                                const std::string& work_dir, TrialResult base,
                                const std::function<bool()>& should_stop) {
  const v1::TrialAssignment& a = t.wire;
  CommandTrialRun run;
  // This agent's operator decides what it runs: a command its policy does
  // not allow is handed back (another agent may allow it), never started.
  if (absl::Status allowed =
          CheckCommandAllowed(o.command_policy, a.command());
      !allowed.ok()) {
    run.end = TrialEnd::kInfrastructureFailure;
    run.summary = absl::StrCat("agent ", o.agent_id, ": ", allowed.message());
    return run;
  }
  const std::optional<RunAsUser>& run_as = o.command_policy.run_as;
  if (run_as.has_value() &&
      ::chown(work_dir.c_str(), run_as->uid, run_as->gid) != 0) {
    run.end = TrialEnd::kInfrastructureFailure;
    run.summary = absl::StrCat("agent ", o.agent_id,
                               ": cannot give the trial folder to run-as user ",
                               run_as->name, ": ", std::strerror(errno));
    return run;
  }
  // The trial's own limit: a command keeps no clock of its own, so the
  // agent enforces it without tessera-trial's slack (AgentTimeLimit).
  const absl::Duration limit = a.time_limit_s() > 0
                                   ? absl::Seconds(a.time_limit_s())
                                   : o.default_time_limit;
  const absl::Time deadline = absl::Now() + limit;
  auto failed = [&](TrialStatus status, std::string reason) {
    run.result = Failed(base, status, std::move(reason));
    return run;
  };

  // The rendezvous, before anything starts.
  CommandRendezvous rdzv;
  const int64_t gang = std::max<int64_t>(a.gang_size(), 1);
  const std::string rdzv_file = absl::StrCat(work_dir, "/rendezvous");
  if (gang == 1 || a.node_rank() == 0) {
    absl::StatusOr<int> port = FreeTcpPort();
    if (!port.ok()) {
      return failed(TrialStatus::kCrash,
                    absl::StrCat("agent: ", port.status().message()));
    }
    rdzv.master_addr = gang == 1 ? "127.0.0.1" : o.advertise_host;
    rdzv.port = *port;
  }
  if (gang > 1) {
    RelayControl control;
    control.deadline = deadline;
    control.should_stop = [&] { return should_stop && should_stop(); };
    absl::Status relayed;
    if (o.planner == nullptr) {
      relayed = absl::FailedPreconditionError(
          "the trial spans agents but there is no planner to relay through");
    } else if (a.node_rank() == 0) {
      relayed = WriteFileAtomically(
          rdzv_file, absl::StrCat(rdzv.master_addr, ":", rdzv.port, "\n"));
      if (relayed.ok()) {
        relayed = PublishRendezvous(*o.planner, o.agent_id, a.trial_id(),
                                    rdzv_file, control);
      }
    } else {
      relayed = FetchRendezvous(*o.planner, o.agent_id, a.trial_id(), rdzv_file,
                                control);
    }
    if (IsLeaseGone(relayed)) {
      run.end = TrialEnd::kLeaseGone;
      run.summary = absl::StrCat("lease gone: ", relayed.message());
      return run;
    }
    if (should_stop && should_stop()) {
      run.end = TrialEnd::kStopped;
      run.summary = "stopped";
      return run;
    }
    if (absl::IsDeadlineExceeded(relayed)) {
      return failed(TrialStatus::kTimeout,
                    "the gang did not meet within the trial's time limit");
    }
    if (!relayed.ok()) {
      return failed(TrialStatus::kCrash,
                    absl::StrCat("agent: rendezvous: ", relayed.message()));
    }
    if (a.node_rank() != 0) {
      absl::StatusOr<std::string> text = ReadFile(rdzv_file);
      std::pair<std::string, std::string> host_port;
      if (text.ok()) {
        const std::string line(absl::StripAsciiWhitespace(*text));
        const size_t colon = line.rfind(':');
        if (colon != std::string::npos) {
          host_port = {line.substr(0, colon), line.substr(colon + 1)};
        }
      }
      if (host_port.first.empty() ||
          !absl::SimpleAtoi(host_port.second, &rdzv.port)) {
        return failed(TrialStatus::kCrash,
                      "agent: the relayed rendezvous is not host:port");
      }
      rdzv.master_addr = host_port.first;
    }
  }

  absl::StatusOr<CommandLaunch> launch =
      BuildCommandLaunch(t, rdzv, work_dir, o.command_dir, run_as);
  if (!launch.ok()) {
    return failed(TrialStatus::kInvalid,
                  std::string(launch.status().message()));
  }
  if (run_as.has_value()) {
    // The files the agent wrote for the command ({config}, $TESSERA_CONFIG)
    // are the command's to read, whatever the agent's umask.
    std::error_code error;
    for (const auto& entry :
         std::filesystem::directory_iterator(work_dir, error)) {
      if (entry.is_regular_file(error)) {
        (void)::chown(entry.path().c_str(), run_as->uid, run_as->gid);
      }
    }
  }
  RunLimits limits;
  limits.time_limit = std::max(deadline - absl::Now(), absl::ZeroDuration());
  limits.kill_grace = o.kill_grace;
  // Power: the energy counters of the GPUs the command runs on, read over
  // its measured steps (on a CPU host there are none).
  absl::StatusOr<const TrialBackend*> device =
      FindTrialBackend(o.device_backend);
  absl::StatusOr<std::unique_ptr<GpuEnergyCounters>> gpus =
      device.ok() && (*device)->runs_on_named_gpu
          ? GpuEnergyCounters::OpenForLocalRanks(a.ranks_per_node())
          : absl::NotFoundError("not a GPU agent");
  std::optional<MeasuredStepsEnergy> energy;
  if (gpus.ok()) {
    energy.emplace([&] { return (*gpus)->TotalJoules(); }, launch->metrics_path,
                   a.warmup_steps(), a.warmup_steps() + a.steps());
  }
  absl::StatusOr<std::vector<ProcessOutcome>> ran = RunProcesses(
      {launch->spec}, limits, [&] { return should_stop && should_stop(); },
      o.registry);
  if (should_stop && should_stop()) {
    run.end = TrialEnd::kStopped;
    run.summary = "stopped";
    return run;
  }
  if (!ran.ok()) {
    return failed(TrialStatus::kCrash,
                  absl::StrCat("agent: ", ran.status().message()));
  }
  CommandEnd end;
  end.process = (*ran)[0];
  if (energy.has_value()) {
    end.energy = energy->Stop();
    end.gpus = (*gpus)->gpus();
  }
  absl::StatusOr<std::string> metrics = ReadFile(launch->metrics_path);
  end.metrics_file = metrics.ok();
  if (metrics.ok()) end.metrics_text = *std::move(metrics);
  end.stdout_text = ReadFileTail(launch->spec.stdout_path, kOutputReadBytes);
  end.stderr_text = ReadFileTail(launch->spec.stderr_path, kOutputReadBytes);
  if (std::optional<std::string> outside =
          KilledFromOutside(end.process, "the command");
      outside.has_value()) {
    // Not the layout's fault (an operator, the OOM killer, a node going
    // down): run it again rather than record a crash.
    run.end = TrialEnd::kInfrastructureFailure;
    run.summary = *std::move(outside);
    return run;
  }
  if (gang > 1 && a.node_rank() != 0 && end.process.exit.success()) {
    // Rank 0's command reports the steps; this part only had to run.
    run.end = TrialEnd::kPartDone;
    run.summary = absl::StrCat("node rank ", a.node_rank(),
                               " done; node rank 0 reports the trial");
    return run;
  }
  run.result = ResultOfCommand(t, end, std::move(base));
  return run;
}

}  // namespace tessera::agents
