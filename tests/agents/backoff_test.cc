#include "agents/backoff.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace tessera::agents {
namespace {

TEST(BackoffTest, EveryDelayWithinTheBounds) {
  BackoffOptions options;  // 100 ms .. 5 s
  Backoff backoff(options, /*seed=*/7);
  for (int i = 0; i < 1000; ++i) {
    const absl::Duration d = backoff.Next();
    EXPECT_GE(d, absl::Milliseconds(100)) << i;
    EXPECT_LE(d, absl::Seconds(5)) << i;
  }
}

TEST(BackoffTest, NominalDoublesUpToTheCap) {
  Backoff backoff(BackoffOptions{}, 1);
  // 100 ms * 2^k: 100, 200, 400, 800, 1600, 3200, then 5000 (the cap).
  const int64_t expected_ms[] = {100, 200, 400, 800, 1600, 3200, 5000, 5000};
  for (int64_t ms : expected_ms) {
    EXPECT_EQ(backoff.Nominal(), absl::Milliseconds(ms));
    const absl::Duration d = backoff.Next();
    // Equal jitter: [nominal / 2, nominal], never below the 100 ms floor.
    EXPECT_GE(d, std::max(absl::Milliseconds(ms) / 2, absl::Milliseconds(100)));
    EXPECT_LE(d, absl::Milliseconds(ms));
  }
}

TEST(BackoffTest, JitterSpreadsTheDelays) {
  Backoff backoff(BackoffOptions{}, 42);
  for (int i = 0; i < 10; ++i) backoff.Next();  // saturated at 5 s
  std::vector<double> seconds;
  for (int i = 0; i < 2000; ++i) {
    seconds.push_back(absl::ToDoubleSeconds(backoff.Next()));
  }
  std::set<double> distinct(seconds.begin(), seconds.end());
  EXPECT_GT(distinct.size(), 1900u);
  const auto [lo, hi] = std::minmax_element(seconds.begin(), seconds.end());
  EXPECT_LT(*lo, 2.6);  // uniform on [2.5, 5]: both ends are reached
  EXPECT_GT(*hi, 4.9);
  double mean = 0;
  for (double s : seconds) mean += s;
  mean /= static_cast<double>(seconds.size());
  // Mean of U[2.5, 5] = 3.75; sd of the mean ~ 0.72 / sqrt(2000) = 0.016.
  EXPECT_NEAR(mean, 3.75, 0.08);
}

TEST(BackoffTest, TwoAgentsDoNotRetryInLockstep) {
  Backoff a(BackoffOptions{}, 1), b(BackoffOptions{}, 2);
  int equal = 0;
  for (int i = 0; i < 20; ++i) equal += a.Next() == b.Next();
  EXPECT_LT(equal, 3);  // only the 100 ms floor of the first try may agree
}

TEST(BackoffTest, SameSeedSameDelays) {
  Backoff a(BackoffOptions{}, 9), b(BackoffOptions{}, 9);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(a.Next(), b.Next());
}

TEST(BackoffTest, ResetStartsOver) {
  Backoff backoff(BackoffOptions{}, 3);
  for (int i = 0; i < 8; ++i) backoff.Next();
  EXPECT_EQ(backoff.Nominal(), absl::Seconds(5));
  backoff.Reset();
  EXPECT_EQ(backoff.attempts(), 0);
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(100));
}

TEST(BackoffTest, LongOutagesDoNotOverflow) {
  Backoff backoff(BackoffOptions{}, 5);
  for (int i = 0; i < 100000; ++i) backoff.Next();
  EXPECT_EQ(backoff.Nominal(), absl::Seconds(5));
  EXPECT_LE(backoff.Next(), absl::Seconds(5));
}

}  // namespace
}  // namespace tessera::agents
