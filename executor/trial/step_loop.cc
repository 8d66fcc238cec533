#include "executor/trial/step_loop.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"

namespace tessera::executor {

absl::Status RunStepLoop(const TrialConfig& c, RankEngine& engine,
                         std::chrono::steady_clock::time_point deadline,
                         const StepLoopHooks& hooks, RankRecord* record) {
  for (int64_t i = 0; i < c.warmup_steps + c.steps; ++i) {
    if (i == c.warmup_steps && hooks.on_measured_start) {
      TESSERA_RETURN_IF_ERROR(hooks.on_measured_start());
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "time limit of %.1f s passed after %d steps", c.time_limit_s, i));
    }
    TESSERA_ASSIGN_OR_RETURN(StepResult step, engine.Step());
    std::pair<double, double> comm = {step.comm_s, step.comm_s};
    if (hooks.timings) {
      TESSERA_ASSIGN_OR_RETURN(comm, hooks.timings(step));
    }
    record->steps.push_back(
        {step.loss, step.step_time_s, comm.first, comm.second});
    if (!std::isfinite(step.loss)) {
      return absl::DataLossError(
          absl::StrCat("loss is ", step.loss, " at step ", i));
    }
  }
  if (hooks.on_measured_end) TESSERA_RETURN_IF_ERROR(hooks.on_measured_end());
  return absl::OkStatus();
}

}  // namespace tessera::executor
