// How a study's recommendation reads on a terminal (`tessera best`, the end
// of `tessera watch` and `tessera submit --wait`): each layout with its
// numbers, each number labelled MEASURED (a trial ran it) or PREDICTED (the
// calibrated cost model), the full run's days, MWh and GPU-hours, why it
// wins, how well the calibration fits the trials, and where the history is.
//
//   PrintRecommendation(recommendation, std::cout);
//   // best throughput: tp=2,sp=0,pp=1,vpp=1,cp=1,dp=4,zero=3,...
//   //   MEASURED (trial 12): 51234 tokens/s, step 0.41 s, MFU 41.2%, ...
//   //   energy: 0.812 tokens/J (MEASURED)
//   //   full run: 12.3 days, 45.6 MWh, 12345 GPU-hours (from MEASURED ...)
//   //   why: exposed comm 12% of the step; bubble 3%
//   // best energy: the same layout
//   // calibration: step-time MAPE 7.2% over 5 trials
//   // predicted for h100-sxm (989 TFLOP/s dense, 79.6 GiB, ...)
//   // history: /var/lib/tessera/planner.db (tessera trials --study 7)
#pragma once

#include <ostream>
#include <string>

#include "absl/strings/string_view.h"
#include "tessera/v1/service.pb.h"

namespace tessera::cli {

// `title: <layout>` and the indented lines of its numbers, labels, full run
// and why.
void PrintRecommendedLayout(absl::string_view title,
                            const v1::RecommendedLayout& layout,
                            std::ostream& out);

// Both best layouts ("best energy: the same layout" when they agree), the
// Pareto front, the calibration, the GPU the predictions used and the
// history, or "no recommendation yet" when the planner has none.
void PrintRecommendation(const v1::Recommendation& recommendation,
                         std::ostream& out);

// "predicted for h100-sxm (989 TFLOP/s dense, 79.6 GiB, 3350 GB/s memory,
// 700 W)": the GPU figures the predictions used, as far as stated.
std::string GpuLine(const v1::Recommendation& recommendation);

// "GPU count: every figure below is for 1024 GPUs (128 nodes), the count
// chosen for energy from the cluster's 2048 GPUs (256 nodes); ...": which
// part of the cluster a study that searched its count is for.
std::string ScaleLine(const v1::RecommendationScale& scale);

// "calibration: step-time MAPE 7.2% over 5 trials" or "calibration: the
// cost model's defaults (no trial measured yet)".
std::string CalibrationLine(const v1::Recommendation& recommendation);

// `tessera best -o csv`: the header and one row for `layout` (none when
// absent), the study's recommendation for `objective` (throughput|energy):
// study_id, objective, final, layout, provenance, trial_id, tokens_per_s,
// step_time_s, mfu, memory_gib_per_gpu, exposed_comm_s, bubble_s,
// tokens_per_joule, energy_provenance, full_run_days, full_run_energy_mwh,
// full_run_gpu_hours, why; numbers in full, empty where not known.
void PrintRecommendedLayoutCsv(const v1::Recommendation& recommendation,
                               absl::string_view objective,
                               const v1::RecommendedLayout* layout,
                               std::ostream& out);

}  // namespace tessera::cli
