// One command trial (backend "command") run to a typed result: the study's
// command (command_launch.h) in the trial's folder, the gang's rendezvous
// relayed through the planner BEFORE the command starts (node rank 0's
// agent picks a free port and publishes "host:port"; the others fetch it),
// the trial's time limit enforced by the agent on the command's whole
// process group (process_runner.h), then the measurements read from
// $TESSERA_METRICS or the framework's own log (command_metrics.h).
//
// How the outcome is typed:
//   timeout  the command ran past the trial's time_limit_s (it and every
//            process it started are killed: SIGTERM, SIGKILL after the
//            grace);
//   oom/nan  a non-zero exit whose output says out of memory / NaN loss
//            (FailureStatusOfOutput), or a reported loss that is not finite;
//   crash    any other non-zero exit or signal (127: the command or its
//            program does not exist), malformed metrics, no metrics at all,
//            or fewer steps than warmup_steps + steps;
//   ok       the measured steps (the first warmup_steps reported are
//            dropped, the same rule as tessera-trial's) as a TrialResult,
//            with the power of its GPUs over those steps where the agent
//            runs on GPUs (NVML energy counters, gpu_energy.h).
// The tail of the command's stdout and stderr is kept in output_tail. In a
// gang, node rank 0's agent reports the result (its command has the
// metrics: torchrun's global rank 0 writes them); another node's agent
// reports only a failure of its own part, else ends with kPartDone.
//
//   CommandTrialRun run = RunCommandTrial(assignment, options, dir, base,
//                                         should_stop);
//   if (run.end == TrialEnd::kResult) Report(TrialResultToJson(run.result));
#pragma once

#include <functional>
#include <string>

#include "agents/gpu_energy.h"
#include "agents/process_runner.h"
#include "agents/trial_execution.h"
#include "core/trial_result.h"
#include "proto/assigned_trial.h"
#include "tessera/v1/service.pb.h"

namespace tessera::agents {

// What the command left behind when it ended.
struct CommandEnd {
  ProcessOutcome process;
  bool metrics_file = false;  // $TESSERA_METRICS exists
  std::string metrics_text;
  std::string stdout_text;  // its last megabytes
  std::string stderr_text;
  // Its GPUs' energy over the measured steps (gpu_energy.h); nullopt: not
  // measured (no GPU, no NVML counter, no metrics file to time it by).
  std::optional<EnergyWindow> energy;
  int64_t gpus = 0;
};

// The result of a command trial of `assignment` that ended as `end`, over
// `base` (what ran: layout, model, ranks, batch).
TrialResult ResultOfCommand(const AssignedTrial& trial, const CommandEnd& end,
                            TrialResult base);

struct CommandTrialRun {
  TrialEnd end = TrialEnd::kResult;
  TrialResult result;   // with kResult
  std::string summary;  // otherwise: why
};

// Runs the command trial of `assignment` in `work_dir` (which exists).
// `should_stop` as RunTrialAssignment's.
CommandTrialRun RunCommandTrial(const AssignedTrial& trial,
                                const TrialExecutionOptions& options,
                                const std::string& work_dir, TrialResult base,
                                const std::function<bool()>& should_stop);

}  // namespace tessera::agents
