#include "service/trial_pool.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace tessera::service {

db::TrialPrediction ToTrialPrediction(const costmodel::Prediction& p) {
  db::TrialPrediction t;
  t.tokens_per_s = p.tokens_per_s;
  t.tokens_per_joule = p.tokens_per_joule;
  t.step_time_s = p.step_time_s;
  t.peak_memory_bytes =
      static_cast<int64_t>(std::llround(p.memory.total_bytes));
  return t;
}

absl::StatusOr<TrialPool> BuildTrialPool(
    const Workload& workload, const costmodel::Calibration& calibration,
    const costmodel::SearchOptions& options, int64_t available_agents,
    int64_t layers) {
  TrialPool pool;
  TESSERA_ASSIGN_OR_RETURN(
      pool.search, costmodel::SearchLayouts(workload, calibration, options));
  pool.entries.reserve(pool.search.candidates.size());
  for (const costmodel::LayoutEvaluation& candidate : pool.search.candidates) {
    PoolEntry entry;
    entry.study = candidate;
    absl::StatusOr<TrialPlan> plan =
        PlanTrial(workload, candidate.layout, available_agents, layers);
    if (!plan.ok()) {
      entry.not_trialable = std::string(plan.status().message());
    } else {
      costmodel::LayoutEvaluation trial =
          costmodel::PredictLayout(plan->workload, plan->layout, calibration);
      if (!trial.feasible) {
        entry.not_trialable =
            absl::StrCat("at the trial's scale (", plan->gang_size,
                         " agents): ", trial.reason);
      } else {
        entry.trial_prediction = trial.prediction;
        entry.key = LayoutKey(plan->layout);
        entry.plan = *std::move(plan);
      }
    }
    pool.entries.push_back(std::move(entry));
  }
  return pool;
}

}  // namespace tessera::service
