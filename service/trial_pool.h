// The candidates a study may trial: the calibrated ranking of its layouts
// (costmodel/search/search.h), each with its trial plan (trial_geometry.h) and
// the calibrated prediction at the trial's scale, so that what a trial measures
// compares with what the model predicted for exactly that trial. A layout
// that cannot be trialed keeps its place with the reason (the model-parallel
// group does not fit the agents, the layers, or the memory at the trial's
// scale).
//
//   TESSERA_ASSIGN_OR_RETURN(TrialPool pool,
//       BuildTrialPool(workload, calibration, {.top = 32}, agents, layers));
//   for (const PoolEntry& e : pool.entries) if (e.plan) ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/workload.h"
#include "db/trial_store.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/prediction.h"
#include "costmodel/search/search.h"
#include "service/trial_geometry.h"

namespace tessera::service {

struct PoolEntry {
  costmodel::LayoutEvaluation study;  // the study-world prediction
  std::optional<TrialPlan> plan;    // absent: not trialable
  std::string not_trialable;        // why, when absent
  // Calibrated prediction of the trial itself (set with plan).
  costmodel::Prediction trial_prediction;
  std::string key;  // LayoutKey(plan->layout); "" without a plan
  // The part of its step time's uncertainty (log-sd) that comes from the
  // calibration's coefficients: how far their covariance moves this layout
  // (the model's own error left out; trial_choice.h adds the study's).
  double coefficient_log_sd = 0;

  // Predicted tokens/s per GPU of the trial (0 without a plan).
  double trial_tokens_per_s_per_gpu() const {
    return plan ? trial_prediction.tokens_per_s_per_gpu : 0;
  }
};

struct TrialPool {
  costmodel::SearchResult search;    // the study-world ranking
  std::vector<PoolEntry> entries;  // search.candidates' order: best first
};

// Searches `workload` with `calibration` keeping `options.top` candidates
// and plans each one's trial on `available_agents` agents (0: none
// trialable, "no agent can run it") with `layers` (0: full model). Fails
// only when the search does (INVALID_ARGUMENT).
absl::StatusOr<TrialPool> BuildTrialPool(
    const Workload& workload, const costmodel::Calibration& calibration,
    const costmodel::SearchOptions& options, int64_t available_agents,
    int64_t layers);

// The store's record of a trial's prediction.
db::TrialPrediction ToTrialPrediction(const costmodel::Prediction& prediction);

}  // namespace tessera::service
