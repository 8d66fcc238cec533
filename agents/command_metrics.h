// Step metrics and failure kinds out of what a user's own training command
// (torchtitan, Megatron-LM or a script) left behind when an agent ran it as a
// trial. Pure parsing: no files, no processes.
//
// - ParseMetricsJsonLines: the JSON Lines a command writes to the file that
//   $TESSERA_METRICS names (the contract for scripts);
// - ParseFrameworkLog: torchtitan's or Megatron-LM's own per-step log lines,
//   for commands that write no metrics file;
// - FailureStatusOfOutput: oom or nan out of a failed command's output.
//
// Step times the frameworks log are means over their log interval (every
// step since the previous logged one), and the first logged step includes
// start-up (compilation, warm-up): the caller drops warm-up steps.
//
//   TESSERA_ASSIGN_OR_RETURN(CommandMetrics m, ParseMetricsJsonLines(text));
//   LogContext context{.tokens_per_step = 8 * 2048, .world_size = 8};
//   absl::StatusOr<CommandMetrics> logged = ParseFrameworkLog(log, context);
//   // logged->source == "torchtitan log", logged->steps[0].step_time_s ...
//   std::optional<TrialStatus> failed = FailureStatusOfOutput(stderr_text);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/trial_result.h"

namespace tessera::agents {

// One training step as the user's command reported it.
struct CommandStep {
  int64_t step = 0;                          // as reported (1-based usually)
  double step_time_s = 0;                    // wall time of the optimizer step
  std::optional<double> loss;                // NaN/inf kept as is
  std::optional<int64_t> tokens;             // tokens of the step, whole job
  std::optional<int64_t> peak_memory_bytes;  // per rank, the max
};

struct CommandMetrics {
  std::vector<CommandStep> steps;  // in the order reported
  std::string source;  // "metrics file", "torchtitan log", "megatron log"
};

// The $TESSERA_METRICS JSON Lines a command writes, one object per line:
//
//   {"step": 3, "step_time_s": 0.412, "loss": 7.93, "tokens": 524288,
//    "peak_memory_bytes": 41234567890}
//
// "step" (integer >= 0) and "step_time_s" (finite number > 0) are required;
// "loss" (number; null = NaN), "tokens" and "peak_memory_bytes" (integers
// >= 0; null = absent) are optional. Integer fields take integral numbers
// only: 12 and 12.0 are 12, 12.5 is an error. Unknown keys are ignored,
// blank lines skipped. INVALID_ARGUMENT "metrics line N: ..." (N 1-based,
// counting blank lines) naming the field for a line that is not JSON, not an
// object, or lacks a field or has it wrong-typed or out of range. An empty
// text gives no steps (the caller decides that no metrics is a failure).
absl::StatusOr<CommandMetrics> ParseMetricsJsonLines(absl::string_view text);

// What a framework's log needs to become step times.
struct LogContext {
  int64_t tokens_per_step = 0;  // global_batch * seq_len; 0: unknown
  int64_t world_size = 1;       // ranks in the job
};

// The steps of torchtitan's or Megatron-LM's own per-step lines in `log`
// (stdout and stderr of the command in any order; ANSI colour codes, rank
// prefixes such as "[rank0]:" and other text around them are ignored).
//
// torchtitan (torchtitan/components/metrics.py, MetricsProcessor.log):
//   step:  2  loss:  7.12345  grad_norm:  1.2345  memory: 12.34GiB(15.60%)
//   tps: 1,234  tflops: 12.34  mfu: 1.23%
// (one line; "wps:" before late 2024). tps is tokens per second per GPU, so
// step_time_s = tokens_per_step / (tps * world_size); memory (GiB, max
// reserved) becomes bytes; a negative loss (a pipeline stage without the
// loss) is none. Needs tokens_per_step > 0.
//
// Megatron-LM (megatron/training/training.py, training_log):
//   [...] iteration       10/     100 | consumed samples: ... | elapsed time
//   per iteration (ms): 412.3 | ... | lm loss: 7.930000E+00 | ... | number of
//   nan iterations:   0 |
// step_time_s from the elapsed time; loss from "lm loss" (Megatron omits a
// NaN loss: then NaN when the line counts nan iterations); peak memory from
// the "max allocated" (MB) of report_memory's lines for that iteration, the
// max over ranks; tokens = tokens_per_step when known.
//
// A step number logged more than once (several ranks logging) is one step at
// its first place: the largest step time and memory, the first loss logged.
// When both formats appear, the one with more step lines wins (torchtitan on
// a tie). NOT_FOUND when neither appears; INVALID_ARGUMENT for world_size < 1,
// a negative tokens_per_step, and, in the format chosen, torchtitan lines
// without tokens_per_step, a torchtitan step whose tps is 0 or a Megatron
// iteration whose elapsed time is 0.
absl::StatusOr<CommandMetrics> ParseFrameworkLog(absl::string_view log,
                                                 const LogContext& context);

// The trial status a failed command's output stands for, from its last 1000
// lines (ANSI codes stripped): kOom for out-of-memory errors ("CUDA out of
// memory", "CUDA error: out of memory", "out of memory" with NCCL, HIP, CPU,
// GPU, MPS or XPU on its line, torch's OutOfMemoryError,
// CUBLAS_STATUS_ALLOC_FAILED, CUDA_ERROR_OUT_OF_MEMORY, "can't allocate
// memory", std::bad_alloc, Python's MemoryError); else kNan for a NaN or
// infinite loss ("loss is nan"/"loss is inf", "nan loss"/"inf loss", "loss
// became nan", Megatron's "found NaN in local ..." / "found Inf in local
// ...", "Detected NaN or Inf in", a nonzero "number of nan iterations",
// autograd's "returned nan values"); else std::nullopt (the caller says
// crash). OOM outranks NaN. Case-insensitive, "nan" and "inf" only as whole
// words ("finance", "nan_check.py" do not count). A process the kernel's OOM
// killer ended leaves no text to find.
std::optional<TrialStatus> FailureStatusOfOutput(absl::string_view output);

}  // namespace tessera::agents
