// Scoring a search: hand-computed sequences, and the random order's
// expectation against every permutation of a small group.
#include "replay/search_score.h"

#include <algorithm>
#include <numeric>

#include "gtest/gtest.h"

namespace tessera::replay {
namespace {

ScoredTrial Ok(double measured, double truth, double seconds = 10) {
  return ScoredTrial{true, measured, truth, seconds};
}
ScoredTrial Failed(double seconds = 1) {
  return ScoredTrial{false, 0, 0, seconds};
}

TEST(SearchScoreTest, TrialsToEachMarkFailuresAndTheCurve) {
  // Best 100. Held after each trial: -, 90, 90, 99, 99.5.
  const SearchScore s = ScoreSequence(
      {Failed(), Ok(90, 90), Failed(), Ok(99, 99), Ok(99.5, 99.5)}, 100, 4);
  EXPECT_EQ(s.trials, 5);
  ASSERT_TRUE(s.trials_to_5pct.has_value());
  EXPECT_EQ(*s.trials_to_5pct, 4);
  EXPECT_EQ(*s.trials_to_2pct, 4);
  EXPECT_EQ(*s.trials_to_1pct, 4);  // 99 is within 1%
  EXPECT_EQ(s.failed_trials, 2);    // both before the 2% mark
  ASSERT_EQ(s.regret_after.size(), 4u);
  EXPECT_DOUBLE_EQ(s.regret_after[0], 1);
  EXPECT_DOUBLE_EQ(s.regret_after[1], 0.1);
  EXPECT_DOUBLE_EQ(s.regret_after[2], 0.1);
  EXPECT_NEAR(s.regret_after[3], 0.01, 1e-12);
  // Seconds until the mark: 1 + 10 + 1 + 10.
  EXPECT_NEAR(s.gpu_hours_to_2pct, 22.0 / 3600, 1e-12);
  EXPECT_NEAR(s.gpu_hours, 32.0 / 3600, 1e-12);
}

TEST(SearchScoreTest, ASearchHoldsWhatItMeasuredFastestNotWhatIsFastest) {
  // The second trial is truly best but measured slower than the first.
  const SearchScore s =
      ScoreSequence({Ok(100, 95), Ok(98, 100), Ok(90, 90)}, 100, 10);
  EXPECT_NEAR(s.regret_after[1], 0.05, 1e-12);
  EXPECT_FALSE(s.trials_to_2pct.has_value());
  EXPECT_EQ(*s.trials_to_5pct, 1);
  // Never reaching 2%: failures and time are those of every trial.
  EXPECT_NEAR(s.gpu_hours_to_2pct, 30.0 / 3600, 1e-12);
}

// Brute force over every order of a small group, without noise.
TEST(SearchScoreTest, RandomOrderIsTheMeanOverEveryPermutation) {
  SweepGroup g;
  const std::vector<double> values = {100, 99.5, 97, 0, 80, 0};
  for (size_t i = 0; i < values.size(); ++i) {
    SweepRow r;
    r.index = static_cast<int64_t>(i);
    r.outcome = values[i] > 0 ? TrialStatus::kOk : TrialStatus::kOom;
    r.tokens_per_s_per_gpu = values[i];
    g.rows.push_back(r);
  }
  std::vector<int> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  double to1 = 0, to2 = 0, to5 = 0, failed = 0, perms = 0;
  std::vector<double> curve(values.size(), 0);
  do {
    std::vector<ScoredTrial> seq;
    for (int i : order) {
      seq.push_back(values[i] > 0 ? Ok(values[i], values[i]) : Failed());
    }
    const SearchScore s = ScoreSequence(seq, 100, 10);
    to1 += *s.trials_to_1pct;
    to2 += *s.trials_to_2pct;
    to5 += *s.trials_to_5pct;
    failed += s.failed_trials;
    for (size_t k = 0; k < curve.size(); ++k) curve[k] += s.regret_after[k];
    perms += 1;
  } while (std::next_permutation(order.begin(), order.end()));
  const SearchScore r = ScoreRandomOrder(g, 1, 10);
  EXPECT_NEAR(*r.trials_to_1pct, to1 / perms, 1e-9);  // (6+1)/(2+1)
  EXPECT_NEAR(*r.trials_to_2pct, to2 / perms, 1e-9);
  EXPECT_NEAR(*r.trials_to_5pct, to5 / perms, 1e-9);  // (6+1)/(3+1)
  EXPECT_NEAR(r.failed_trials, failed / perms, 1e-9);
  ASSERT_EQ(r.regret_after.size(), curve.size());
  for (size_t k = 0; k < curve.size(); ++k) {
    EXPECT_NEAR(r.regret_after[k], curve[k] / perms, 1e-9) << "k=" << k + 1;
  }
}

}  // namespace
}  // namespace tessera::replay
