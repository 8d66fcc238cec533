#include "replay/search_score.h"

#include <algorithm>
#include <functional>

namespace tessera::replay {
namespace {

constexpr double kHeldWithin[] = {0.01, 0.02, 0.05};
constexpr double kFailedMark = 0.02;  // failures counted until within 2%

}  // namespace

SearchScore ScoreSequence(const std::vector<ScoredTrial>& trials,
                          double best, int64_t curve_length) {
  SearchScore s;
  s.trials = static_cast<double>(trials.size());
  double held_measured = -1;
  double held_true = 0;
  bool reached_mark = false;
  double failed = 0;
  double seconds = 0;
  for (size_t i = 0; i < trials.size(); ++i) {
    const ScoredTrial& t = trials[i];
    const double k = static_cast<double>(i + 1);
    seconds += t.gpu_seconds;
    if (!t.ok) {
      failed += 1;
    } else if (t.measured_tokens_per_s_per_gpu > held_measured) {
      held_measured = t.measured_tokens_per_s_per_gpu;
      held_true = t.true_tokens_per_s_per_gpu;
    }
    const double regret = best > 0 ? 1 - held_true / best : 1;
    if (static_cast<int64_t>(i) < curve_length) s.regret_after.push_back(regret);
    std::optional<double>* to[] = {&s.trials_to_1pct, &s.trials_to_2pct,
                                   &s.trials_to_5pct};
    for (int j = 0; j < 3; ++j) {
      if (!to[j]->has_value() && regret <= kHeldWithin[j] + 1e-12) *to[j] = k;
    }
    if (!reached_mark) {
      s.failed_trials = failed;
      s.gpu_hours_to_2pct = seconds / 3600;
      reached_mark = regret <= kFailedMark + 1e-12;
    }
  }
  s.gpu_hours = seconds / 3600;
  return s;
}

SearchScore ScoreRandomOrder(const SweepGroup& group,
                             double gpu_seconds_per_trial,
                             int64_t curve_length) {
  SearchScore s;
  const double best = group.BestTokensPerSPerGpu();
  std::vector<double> values;  // 0 for a failed layout
  for (const SweepRow& r : group.rows) {
    values.push_back(r.outcome == TrialStatus::kOk ? r.tokens_per_s_per_gpu
                                                   : 0);
  }
  std::sort(values.begin(), values.end(), std::greater<>());
  const int64_t n = static_cast<int64_t>(values.size());
  s.trials = static_cast<double>(n);
  if (n == 0 || best <= 0) return s;
  auto within = [&](double x) {
    return std::count_if(values.begin(), values.end(), [&](double v) {
      return v > 0 && v >= (1 - x) * best - 1e-9;
    });
  };
  const double nn = static_cast<double>(n);
  std::optional<double>* to[] = {&s.trials_to_1pct, &s.trials_to_2pct,
                                 &s.trials_to_5pct};
  for (int j = 0; j < 3; ++j) {
    const double m = static_cast<double>(within(kHeldWithin[j]));
    if (m > 0) *to[j] = (nn + 1) / (m + 1);
  }
  const double failed = static_cast<double>(
      std::count(values.begin(), values.end(), 0.0));
  const double m2 = static_cast<double>(within(kFailedMark));
  s.failed_trials = failed / (m2 + 1);
  if (s.trials_to_2pct) {
    s.gpu_hours_to_2pct = *s.trials_to_2pct * gpu_seconds_per_trial / 3600;
  }
  s.gpu_hours = nn * gpu_seconds_per_trial / 3600;
  // E[max of a random k-subset]: P(max = the i-th largest) =
  // C(n - i, k - 1) / C(n, k), i = 1 .. n - k + 1.
  for (int64_t k = 1; k <= std::min(n, curve_length); ++k) {
    double p = static_cast<double>(k) / nn;  // i = 1
    double expected = 0;
    for (int64_t i = 1; i <= n - k + 1; ++i) {
      expected += p * values[static_cast<size_t>(i - 1)];
      // P_{i+1} = P_i * (n - i - k + 1) / (n - i)
      if (n - i > 0) {
        p *= static_cast<double>(n - i - k + 1) / static_cast<double>(n - i);
      }
    }
    s.regret_after.push_back(1 - expected / best);
  }
  return s;
}

}  // namespace tessera::replay
