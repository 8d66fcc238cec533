// The outcome of one trial: what `tessera-trial` writes as JSON, what an agent
// reports, and what the trial store keeps. Field names are the JSON's.
//
//   TrialResult r;
//   r.status = TrialStatus::kOk;
//   nlohmann::json j = TrialResultToJson(r);
//   TESSERA_ASSIGN_OR_RETURN(TrialResult back, TrialResultFromJson(j));
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/layout.h"
#include "nlohmann/json.hpp"

namespace tessera {

enum class TrialStatus {
  kOk,       // every step ran; metrics are measured
  kOom,      // an allocation exceeded the memory limit or the device
  kNan,      // the loss became NaN or infinite
  kTimeout,  // the trial ran past its time limit
  kCrash,    // the process died or failed unexpectedly
  kInvalid,  // the layout does not fit the ranks, model or backend
};

absl::string_view TrialStatusName(TrialStatus s);
absl::StatusOr<TrialStatus> ParseTrialStatus(absl::string_view text);

// Median and 10th / 90th percentiles over the measured steps.
struct StepTimeStats {
  double median = 0;
  double p10 = 0;
  double p90 = 0;
};

// The q-quantile (0..1) of v, linearly interpolated; 0 for an empty v.
double Percentile(std::vector<double> v, double q);

// The median, p10 and p90 of `measured_s` (the measured steps' times).
StepTimeStats StepTimeStatsOf(const std::vector<double>& measured_s);

struct TrialResult {
  TrialStatus status = TrialStatus::kCrash;
  std::string reason;  // why, for every status but ok ("" when ok)
  Layout layout;
  // What ran.
  std::string backend;  // "cpu", "cuda", "command"
  std::string model;    // preset name or "custom"
  std::string device;   // e.g. "NVIDIA H100 80GB HBM3", "cpu (8 threads)"
  int64_t ranks = 0;
  int64_t global_batch = 0;
  int64_t seq_len = 0;
  int64_t warmup_steps = 0;
  int64_t steps = 0;  // measured steps completed
  // Measured, per optimizer step, over the measured steps only.
  StepTimeStats step_time_s;
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double tflops_per_gpu = 0;  // model FLOPs (no recomputation) / step time
  double mfu = 0;             // tflops_per_gpu / peak_tflops
  double peak_tflops = 0;     // the backend's peak used for MFU
  std::string
      peak_tflops_source;  // how it was obtained (measured GEMM, datasheet)
  // Per rank; a command trial's one entry is the largest its ranks reported.
  std::vector<int64_t> peak_memory_bytes;
  double compute_s = 0;  // per step (median over steps, rank max)
  double comm_s = 0;
  double exposed_comm_s = 0;
  std::optional<double> watts_per_gpu;     // absent: power not measured
  std::optional<double> tokens_per_joule;  // absent: power not measured
  std::vector<double> loss;                // per step, warm-up included
  std::vector<double> step_times_s;        // per step, warm-up included
  // The last lines of a command trial's stdout and stderr (backend
  // "command"); "" for Tessera's executor, whose reason holds its error.
  std::string output_tail;
};

// Non-finite numbers (a nan trial's loss) become null. Dump the JSON with
// nlohmann's error_handler_t::replace: reasons may carry arbitrary bytes (a
// crashed process's stderr).
nlohmann::json TrialResultToJson(const TrialResult& result);
// Reads the object TrialResultToJson writes; errors name the field
// ("trial.status: ..."). Unknown fields are ignored (newer executors may add).
// null in loss / step_times_s reads back as NaN.
absl::StatusOr<TrialResult> TrialResultFromJson(const nlohmann::json& json);

}  // namespace tessera
