#include "service/measurement_noise.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_format.h"
#include "service/measured_layouts.h"
#include "service/trial_geometry.h"

namespace tessera::service {
namespace {

// A normal's 90th percentile over its sd, and the median's efficiency
// (sd of a median of n = 1.2533 sd / sqrt(n) for large n).
constexpr double kP90OverSd = 1.2816;
constexpr double kMedianSdFactor = 1.2533;

// The noise of a trial's median step time, from its p10..p90 spread.
std::optional<double> StepNoise(const db::Trial& t) {
  if (!t.measured || t.measured->steps < 2) return std::nullopt;
  const StepTimeStats& s = t.measured->step_time_s;
  if (!(s.p10 > 0) || !(s.p90 >= s.p10)) return std::nullopt;
  const double step_sd = std::log(s.p90 / s.p10) / (2 * kP90OverSd);
  return kMedianSdFactor * step_sd /
         std::sqrt(static_cast<double>(t.measured->steps));
}

}  // namespace

NoiseEstimate EstimateNoise(const std::vector<db::Trial>& trials) {
  NoiseEstimate n;
  std::map<std::string, std::vector<double>> by_layout;
  std::vector<double> step_noise;
  for (const db::Trial& t : trials) {
    const double v = MeasuredTokensPerSPerGpu(t);
    if (!(v > 0)) continue;
    by_layout[LayoutKey(t.layout)].push_back(std::log(v));
    if (std::optional<double> s = StepNoise(t)) step_noise.push_back(*s);
  }
  // Repeats: every pair of measurements of one layout.
  double sum_sq = 0;
  for (const auto& [key, logs] : by_layout) {
    for (size_t i = 0; i < logs.size(); ++i) {
      for (size_t j = i + 1; j < logs.size(); ++j) {
        const double d = logs[i] - logs[j];
        sum_sq += d * d;
        ++n.repeat_pairs;
      }
    }
  }
  if (n.repeat_pairs >= 2) {
    n.log_sd = std::max(kMinNoiseLogSd,
                        std::sqrt(sum_sq / static_cast<double>(n.repeat_pairs) /
                                  2));
    n.source = absl::StrFormat("%d repeated measurements", n.repeat_pairs);
    return n;
  }
  double steps = 0;
  if (!step_noise.empty()) {
    std::sort(step_noise.begin(), step_noise.end());
    steps = step_noise[step_noise.size() / 2];
  }
  if (steps > kDefaultNoiseLogSd) {
    n.log_sd = steps;
    n.source = "the spread of the trials' steps";
  } else {
    n.log_sd = kDefaultNoiseLogSd;
    n.source = "the default for repeated runs (no repeats yet)";
  }
  return n;
}

std::string Lead::Text() const {
  return absl::StrFormat("%.1f%% +- %.1f%%", 100 * (std::exp(log_lead) - 1),
                         100 * log_sd);
}

std::optional<Lead> LeadOf(const std::vector<const MeasuredLayout*>& ranked,
                           const NoiseEstimate& noise) {
  if (ranked.size() < 2) return std::nullopt;
  Lead l;
  l.log_lead = std::log(ranked[0]->tokens_per_s_per_gpu /
                        ranked[1]->tokens_per_s_per_gpu);
  l.log_sd = noise.log_sd *
             std::sqrt(1.0 / static_cast<double>(ranked[0]->trials) +
                       1.0 / static_cast<double>(ranked[1]->trials));
  return l;
}

}  // namespace tessera::service
