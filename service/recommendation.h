// A study's recommendation (service.proto Recommendation): the best
// throughput and the best energy layout and the Pareto front of tokens/s
// against tokens/J over every candidate (the ranking's, its Pareto front, and
// every trialed layout). Once some layout ran ok the two best are chosen
// among the measured layouts (an untrialed one the model ranks higher stays
// on the front, and the best's `why` says so); before, among the predicted.
// Each number is labelled:
//   - tokens/s is MEASURED for a layout an ok trial ran (the highest rung's
//     median), else PREDICTED by the calibrated model. A trial run at a
//     smaller scale (fewer data-parallel ranks or layers) is scaled to the
//     study's world by the calibrated model's ratio study / trial, and `why`
//     says so ("measured at dp 2 of 32; x15.6 to the study's world");
//   - tokens/J is MEASURED only when the trial measured power (never on CPU);
//     otherwise it is the throughput over the calibrated model's power
//     (PREDICTED);
//   - step time, MFU and exposed communication follow the throughput;
//     memory and bubble are the model's.
// The full run for the study's total_tokens uses those numbers: days =
// tokens / (tokens/s) / 86400, GPU-hours = world * tokens / (tokens/s) /
// 3600, MWh = tokens / (tokens/J) / 3.6e9.
//
//   v1::Recommendation r = BuildRecommendation(input);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/workload.h"
#include "db/trial_store.h"
#include "costmodel/calibration/calibration.h"
#include "service/trial_pool.h"
#include "tessera/v1/service.pb.h"

namespace tessera::service {

struct RecommendationInput {
  int64_t study_id = 0;
  bool final = false;
  const Workload* workload = nullptr;              // the study's, GPU resolved
  const TrialPool* pool = nullptr;                 // with `calibration`
  const std::vector<db::Trial>* trials = nullptr;  // the study's
  const costmodel::Calibration* calibration = nullptr;
  double calibration_mape = 0;
  int64_t calibration_samples = 0;
  int64_t layers = 0;  // the trial options' scale-down
  std::string history_db;
};

v1::Recommendation BuildRecommendation(const RecommendationInput& input);

// The recommendation as the store keeps it (protobuf JSON) and back.
std::string RecommendationToJson(const v1::Recommendation& recommendation);
absl::StatusOr<v1::Recommendation> RecommendationFromJson(
    absl::string_view json);

}  // namespace tessera::service
