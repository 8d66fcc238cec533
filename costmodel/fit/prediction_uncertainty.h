// How sure a prediction is: an interval on a layout's step time from the
// spread of the calibration's coefficients and the cost model's own error,
// and, for a ranked list of layouts, which ones the model cannot tell from
// the best (where trials should decide).
//
// One standard deviation in log space (about a 68% interval):
//   sd(log t)^2 = g^T S g + model_log_sd^2,
// g_j = d log t / d u_j, u_j the coefficient's shifted log
// (ShiftedLogOffset), S the coefficients' covariance in u; each derivative a
// central difference over u_j +- sqrt(S_jj) within the coefficient's range.
// The whole covariance matters: a fit pins down the combinations its runs
// measure (a step time fixes GEMM rate and element-wise traffic together)
// while each alone stays near the prior's spread, so the diagonal alone would
// call a measured layout as uncertain as an unmeasured one.
// Between two layouts of one workload the coefficient terms are correlated (a
// slower GEMM slows both), so the spread of log(t_a / t_b) is that of g_a -
// g_b; the model's own error is taken as independent between layouts, which
// is conservative: it calls two layouts indistinguishable more often than a
// shared error would.
//
// Where the spreads come from:
//   - the stack defaults (no calibration file): no coefficient spread; model
//     error the published runs' step-time MAPE for the precision
//     (bench/costmodel/published_runs_bench: bf16 7.1% on 251 runs, fp8 8.6%
//     on 46) as a normal's sd (MAPE * sqrt(pi/2)): 0.09 and 0.11; it is the
//     error on runs like those, not a bound (planner_published_runs_test
//     fails when the bench's figures drift from them).
//   - a fitted calibration file: the fitted coefficients their posterior
//     covariance, every other one the fit's prior sd (what the measurements did
//     not exercise is as uncertain as the prior says: a fit on single-node runs
//     says little about the inter-node links), except the fixed costs that
//     fits leave at the prior by default (CalibrationFitOptions::fixed: the
//     per-micro-batch overhead and the host floor), which no trial of a study
//     moves: a spread on them would send trials where nothing is learned (on
//     the usp sweep's replay it took the 1B on 8 nodes from 3 trials to 4 and
//     GPU-hours to 2% from 1.2 to 33); model error the fit's step-time MAPE *
//     sqrt(pi/2), at least kMinModelLogSd.
//   - a file with no fit (collectives only): as the defaults.
//
//   PredictionUncertainty u =
//   DefaultPredictionUncertainty(w.training.precision); RankingUncertainty r =
//   AssessRanking(w, result.candidates, c, u);
//   // r.intervals[0]: rank 1's step time, r.within_error_of_best: ties.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/workload.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/calibration/calibration_file.h"
#include "costmodel/prediction.h"

namespace tessera::costmodel {

// The model error of the stack defaults (see above), bf16 and fp8.
inline constexpr double kDefaultModelLogSd = 0.09;
inline constexpr double kDefaultFp8ModelLogSd = 0.11;
// The least model error a fit is credited with: its measurements' own noise.
inline constexpr double kMinModelLogSd = 0.02;

struct PredictionUncertainty {
  // The uncertain coefficients and their covariance in u (row-major,
  // coefficients.size()^2); a coefficient not listed is exact.
  std::vector<std::string> coefficients;
  std::vector<double> covariance;
  // The cost model's own error on a step time, log space.
  double model_log_sd = kDefaultModelLogSd;
  std::string source;  // where the spreads come from, one line

  // Independent coefficients with these log-space sds.
  static PredictionUncertainty Independent(
      const std::map<std::string, double>& log_sd, double model_log_sd);
};

// The stack defaults' spreads for runs in this precision.
PredictionUncertainty DefaultPredictionUncertainty(Precision precision);
// The model error of a fit with this step-time MAPE: MAPE * sqrt(pi/2) (a
// normal's sd from its mean absolute deviation), at least kMinModelLogSd.
double ModelLogSdOfMape(double step_time_mape);
// The spreads of a calibration file's fit (the defaults' for the precision
// when it has none).
PredictionUncertainty PredictionUncertaintyOf(const CalibrationFile& file,
                                              Precision precision);

// A step time's interval, one sd each side.
struct StepTimeInterval {
  double low_s = 0;
  double high_s = 0;
  double log_sd = 0;
};

// The interval of a feasible evaluation's step time (PredictLayout(workload,
// evaluation.layout, calibration)); all zeros for an infeasible one.
StepTimeInterval IntervalOf(const Workload& workload,
                            const LayoutEvaluation& evaluation,
                            const Calibration& calibration,
                            const PredictionUncertainty& uncertainty);

struct RankingUncertainty {
  std::vector<StepTimeInterval> intervals;  // one per candidate, in order
  // Per candidate: its step time is within one sd of the difference from the
  // first candidate's (the first is within its own error: true).
  std::vector<bool> within_error_of_best;
  // How many candidates are within error of the best (the best included).
  int64_t within_error_count = 0;
};

// Intervals for ranked candidates (SearchResult::candidates: feasible, best
// first) and which of them the model cannot tell from the first.
RankingUncertainty AssessRanking(
    const Workload& workload, const std::vector<LayoutEvaluation>& candidates,
    const Calibration& calibration, const PredictionUncertainty& uncertainty);

}  // namespace tessera::costmodel
