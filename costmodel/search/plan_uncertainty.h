// How sure a plan is: a search result's candidates with their step-time
// intervals, which of them the model cannot tell from the best, the best
// layouts' intervals, and where the spreads come from
// (costmodel/fit/prediction_uncertainty.h). `tessera plan` computes it
// for a local search; the planner service computes it for its own
// calibration and sends it with the plan (proto/convert.h).
//
//   PlanUncertainty u = AssessPlan(w, result, calibration,
//                                  DefaultPredictionUncertainty(precision));
#pragma once

#include "core/workload.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/fit/prediction_uncertainty.h"
#include "costmodel/search/search.h"

namespace tessera::costmodel {

struct PlanUncertainty {
  RankingUncertainty ranking;  // one interval per candidate, in order
  StepTimeInterval best_throughput;
  StepTimeInterval best_energy;
  // Where the spreads come from; its source and model_log_sd are what a
  // reader is told.
  PredictionUncertainty spreads;
};

PlanUncertainty AssessPlan(const Workload& workload, const SearchResult& result,
                           const Calibration& calibration,
                           const PredictionUncertainty& spreads);

}  // namespace tessera::costmodel
