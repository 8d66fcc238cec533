// What each rank of a trial measures, how the ranks' records travel to every
// rank, and how they become a TrialResult's measured fields; shared by the CPU
// trial (trial_runner.cc) and the CUDA trial (executor/cuda/cuda_trial.cc):
//   - exposed communication per step, separate from communication (the CPU's
//     synchronous collectives set it equal to comm_s),
//   - energy per GPU over the measured window (absent: power not measured),
//   - staging through backend memory in GatherRecords, so that it works over
//     NCCL (device buffers) as over TCP (host buffers).
//
//   std::vector<RankRecord> ranks = ...;  // gathered
//   SummariseSteps(config_of_trial, ranks, peak_per_rank, result);
//   if (!failure.ok()) return FailedResult(result, failure);
//   SummarisePower(config_of_trial, ranks, result);
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model.h"
#include "core/trial_result.h"
#include "executor/backend.h"
#include "executor/comm/communicator.h"

namespace tessera::executor {

struct StepRecord {
  double loss = 0;
  double step_time_s = 0;     // this rank's wall time of the step
  double comm_s = 0;          // in communication
  double exposed_comm_s = 0;  // of which on the critical path
};

// A GPU's energy over the measured steps.
struct EnergyRecord {
  double joules = 0;
  double seconds = 0;
};

struct RankRecord {
  std::vector<StepRecord> steps;  // warm-up included
  int64_t peak_bytes = 0;
  // The energy of this rank's GPU; absent when not measured, or when another
  // rank already reports the same GPU (ranks as threads on one device).
  std::optional<EnergyRecord> energy;
};

// The trial figures the summaries need.
struct TrialShape {
  ModelConfig model;
  int64_t ranks = 1;
  int64_t gpus = 1;  // physical GPUs (ranks as threads share one)
  int64_t global_batch = 0;
  int64_t seq_len = 0;
  int64_t warmup_steps = 0;
};

// The trial status a failed rank's error stands for: RESOURCE_EXHAUSTED is
// oom, DATA_LOSS nan, DEADLINE_EXCEEDED timeout, INVALID_ARGUMENT and
// FAILED_PRECONDITION invalid, the rest crash.
TrialStatus TrialStatusFor(const absl::Status& status);

// `result` (what was measured so far is kept) ending with `status`, for
// `reason`.
TrialResult FailedResult(TrialResult result, TrialStatus status,
                         absl::string_view reason);
// The same for an error: its TrialStatusFor and its message.
TrialResult FailedResult(TrialResult result, const absl::Status& error);

// Fills loss, step_times_s, steps, step_time_s, tokens/s (global and per
// rank), tflops_per_gpu, mfu, peak_memory_bytes, compute_s, comm_s and
// exposed_comm_s from the steps every rank completed: a step lasts as long as
// its slowest rank; comm and exposed comm are means over ranks; compute is
// the step time less the exposed communication. Medians over the measured
// steps (after the warm-up).
void SummariseSteps(const TrialShape& trial,
                    const std::vector<RankRecord>& ranks,
                    double peak_tflops_per_rank, TrialResult& result);

// Sets watts_per_gpu (mean over the GPUs) and tokens_per_joule (tokens of the
// measured steps over all GPUs' energy) when `gpus` records carry energy;
// leaves both absent otherwise (never a made-up number).
void SummarisePower(const TrialShape& trial,
                    const std::vector<RankRecord>& ranks,
                    int64_t measured_steps, TrialResult& result);

// Every rank's record (all ranks ran `steps` steps), gathered over `world`
// through a buffer of `backend` (device memory on CUDA), with one extra
// number per rank (`mine`, e.g. the per-rank peak; rank 0's comes back in
// *rank0_extra). Doubles travel bit-exactly as pairs of i32 words.
absl::StatusOr<std::vector<RankRecord>> GatherRecords(
    Communicator& world, Backend& backend, const RankRecord& mine,
    int64_t steps, double extra, double* rank0_extra);

// The packing GatherRecords uses (exposed for tests).
std::vector<int32_t> PackRecord(const RankRecord& record, int64_t steps,
                                double extra);
RankRecord UnpackRecord(const int32_t* words, int64_t steps, double* extra);
int64_t PackedRecordWords(int64_t steps);

}  // namespace tessera::executor
