// A trial's time budget (core/trial_time_budget.h): each layer fires after
// the one inside it, by hand at a 100 s limit.
#include "core/trial_time_budget.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(TrialTimeBudgetTest, EachLayerFiresAfterTheOneInsideIt) {
  // Communicators at the limit; the watchdog at 1.1 x 100 + 5 = 115 s; the
  // agent 5 s later.
  EXPECT_EQ(TrialCommTimeout(100, absl::Minutes(10)), absl::Seconds(100));
  EXPECT_EQ(TrialWatchdogAfter(100), absl::Seconds(115));
  EXPECT_EQ(TrialKillAfter(100), absl::Seconds(120));
  for (double limit : {0.5, 1.0, 30.0, 3600.0}) {
    EXPECT_LT(TrialCommTimeout(limit, absl::Minutes(10)),
              TrialWatchdogAfter(limit))
        << limit;
    EXPECT_LT(TrialWatchdogAfter(limit), TrialKillAfter(limit)) << limit;
  }
}

TEST(TrialTimeBudgetTest, WithoutALimitNothingFires) {
  EXPECT_EQ(TrialCommTimeout(0, absl::Minutes(10)), absl::Minutes(10));
  EXPECT_EQ(TrialWatchdogAfter(0), absl::InfiniteDuration());
  EXPECT_EQ(TrialKillAfter(-1), absl::InfiniteDuration());
}

}  // namespace
}  // namespace tessera
