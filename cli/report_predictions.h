// The cost model's step-time breakdown for each trial of a report (compute,
// exposed communication, pipeline bubble), to draw beside what the trial
// measured. The store keeps a trial's predicted step time but not its
// parts, so they are predicted again here: at the scale the trial ran (its
// `ran` spec, set for ok trials) with the calibration the study's
// recommendation lists (the defaults of the trial's stack where it lists
// none).
//
//   std::map<int64_t, TrialBreakdown> b =
//       PredictTrialBreakdowns(trials, recommendation);
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/v1/service.pb.h"

namespace tessera::cli {

// One trial's predicted breakdown, or why there is none.
struct TrialBreakdown {
  bool predicted = false;  // false: `why` says what was missing
  v1::Prediction prediction;
  std::string why;
};

// By trial id, for every ok trial with a `ran` spec; other trials have no
// entry (nothing ran that could be compared).
std::map<int64_t, TrialBreakdown> PredictTrialBreakdowns(
    const std::vector<v1::Trial>& trials,
    const v1::Recommendation& recommendation);

}  // namespace tessera::cli
