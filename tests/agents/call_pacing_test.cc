// An agent's wait before its next heartbeat or poll (agents/call_pacing.h):
// the interval with +-10% jitter, stretched (doubling, with jitter, up to
// max_stretch intervals) while the planner is slow or busy.
#include "agents/call_pacing.h"

#include <set>

#include "gtest/gtest.h"

namespace tessera::agents {
namespace {

const absl::Duration kInterval = absl::Seconds(2);
const absl::Duration kQuick = absl::Milliseconds(5);

TEST(CallPacingTest, AQuickAnswerWaitsTheIntervalWithJitter) {
  CallPacing pacing(CallPacingOptions{}, 7);
  std::set<int64_t> distinct;
  for (int i = 0; i < 200; ++i) {
    const absl::Duration w = pacing.After(kInterval, kQuick, absl::OkStatus());
    EXPECT_GE(w, kInterval * 0.9);
    EXPECT_LE(w, kInterval * 1.1);
    distinct.insert(absl::ToInt64Milliseconds(w));
  }
  EXPECT_GT(distinct.size(), 50u) << "no jitter: agents would beat in step";
  EXPECT_EQ(pacing.slow_calls(), 0);
}

TEST(CallPacingTest, ASlowOrBusyPlannerStretchesTheWaitUpToTheCap) {
  CallPacing pacing(CallPacingOptions{.max_stretch = 4}, 7);
  // Slow: a quarter of the interval or more.
  absl::Duration w = pacing.After(kInterval, kInterval / 4, absl::OkStatus());
  EXPECT_GE(w, kInterval);
  EXPECT_LE(w, 2 * kInterval);
  for (int i = 0; i < 20; ++i) {
    w = pacing.After(kInterval, kQuick,
                     absl::ResourceExhaustedError("planner busy"));
    EXPECT_GE(w, kInterval);
    EXPECT_LE(w, 4 * kInterval) << "past max_stretch";
  }
  EXPECT_GE(w, 2 * kInterval) << "no stretch after 21 slow calls";
  EXPECT_EQ(pacing.slow_calls(), 21);
  // A quick answer starts again from the interval.
  w = pacing.After(kInterval, kQuick, absl::OkStatus());
  EXPECT_LE(w, kInterval * 1.1);
  EXPECT_EQ(pacing.slow_calls(), 0);
}

TEST(CallPacingTest, OnlyBusyOrAwayIsSlowNotARefusal) {
  EXPECT_TRUE(PlannerSlowOrAway(absl::DeadlineExceededError("")));
  EXPECT_TRUE(PlannerSlowOrAway(absl::ResourceExhaustedError("")));
  EXPECT_TRUE(PlannerSlowOrAway(absl::UnavailableError("")));
  EXPECT_FALSE(PlannerSlowOrAway(absl::NotFoundError("")));
  EXPECT_FALSE(PlannerSlowOrAway(absl::FailedPreconditionError("")));
  EXPECT_FALSE(PlannerSlowOrAway(absl::OkStatus()));
}

}  // namespace
}  // namespace tessera::agents
