// How noisy a study's measurements are, and how sure a lead is. A trial's
// tokens/s differs from the layout's true rate by run-to-run noise (which
// node, the fabric's other traffic, clocks) and by the spread of its steps;
// a winner declared by less than that is a coin toss.
//
// The noise of one trial's measurement, in log space:
//   - from repeats: layouts measured more than once give
//     sd(log(a / b)) / sqrt(2) over their pairs (run-to-run and step noise
//     together, what a decision faces);
//   - from the steps: a trial's p10..p90 step times span 2 x 1.2816 step sds,
//     and its median of n steps has about 1.2533 sd / sqrt(n);
//   - at least kMinNoiseLogSd, and kDefaultNoiseLogSd while neither is known
//     (a few percent: repeated GPU training runs).
// The noise estimate is the repeats' when there are at least two pairs,
// else the larger of the steps' and the default.
//
// A layout measured several times counts as the steps-weighted mean of its
// log tokens/s (measured_layouts.h); the lead of the best over the
// runner-up is log(a / b) with sd noise * sqrt(1/n_a + 1/n_b), n the trials
// of each ("leads by 3.1% +- 1.4%").
//
//   NoiseEstimate noise = EstimateNoise(trials);
//   std::optional<Lead> lead = LeadOf(RankMeasured(MeasuredLayouts(trials)),
//                                     noise);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "db/trial_store.h"
#include "service/measured_layouts.h"

namespace tessera::service {

inline constexpr double kDefaultNoiseLogSd = 0.02;
inline constexpr double kMinNoiseLogSd = 0.005;

struct NoiseEstimate {
  double log_sd = kDefaultNoiseLogSd;
  int64_t repeat_pairs = 0;  // pairs of measurements of one layout
  std::string source;        // one line: where it comes from
};

// The noise of the study's ok trials (see above).
NoiseEstimate EstimateNoise(const std::vector<db::Trial>& trials);

// How far the first of `ranked` leads the second (none with fewer than
// two).
struct Lead {
  double log_lead = 0;  // log(first / second)
  double log_sd = 0;    // its noise
  // "3.1% +- 1.4%".
  std::string Text() const;
  // The lead is more than `z` sds.
  bool Clear(double z) const { return log_lead > z * log_sd; }
};
std::optional<Lead> LeadOf(const std::vector<const MeasuredLayout*>& ranked,
                           const NoiseEstimate& noise);

}  // namespace tessera::service
