// The one step loop of every trial backend (the CPU trial in
// trial_runner.cc, the CUDA trial in executor/cuda/cuda_trial.cc): one
// rank's warm-up and measured steps under the trial's deadline, each step
// recorded, a non-finite loss ending it as DATA_LOSS (the trial's nan), the
// deadline as DEADLINE_EXCEEDED (its timeout). A backend differs only in how
// it times a step's communication and what it does at the bounds of the
// measured steps (the CUDA trial's barrier and energy window).
//
//   StepLoopHooks hooks;  // the CPU's defaults
//   TESSERA_RETURN_IF_ERROR(
//       RunStepLoop(config, *engine, TrialDeadline(config), hooks, &record));
#pragma once

#include <chrono>
#include <functional>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "executor/engine/rank_engine.h"
#include "executor/trial/trial_config.h"
#include "executor/trial/trial_records.h"

namespace tessera::executor {

struct StepLoopHooks {
  // A step's communication and exposed communication, in seconds. Empty:
  // the engine's comm_s for both (synchronous collectives are all on the
  // critical path).
  std::function<absl::StatusOr<std::pair<double, double>>(const StepResult&)>
      timings;
  // Before the first measured step and after the last; may be empty.
  std::function<absl::Status()> on_measured_start;
  std::function<absl::Status()> on_measured_end;
};

// Runs config.warmup_steps + config.steps steps of `engine`, appending each
// to record->steps. Stops at the first failure: the engine's error, the
// hooks', DEADLINE_EXCEEDED past `deadline`, DATA_LOSS for a loss that is
// not finite (that step is recorded).
absl::Status RunStepLoop(const TrialConfig& config, RankEngine& engine,
                         std::chrono::steady_clock::time_point deadline,
                         const StepLoopHooks& hooks, RankRecord* record);

}  // namespace tessera::executor
