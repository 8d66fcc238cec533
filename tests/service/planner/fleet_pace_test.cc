// The fleet paces itself (service/fleet_pace.h): intervals grow
// with the fleet past what the planner plans for, timeouts with them, and
// shrink only once every agent heard the shorter interval.
#include "service/fleet_pace.h"

#include "gtest/gtest.h"

namespace tessera::service {
namespace {

PlannerOptions Defaults() {
  PlannerOptions o;
  o.heartbeat_interval = absl::Seconds(1);
  o.lease_poll_interval = absl::Seconds(1);
  o.lease_timeout = absl::Seconds(10);
  o.agent_timeout = absl::Seconds(30);
  o.max_heartbeats_per_s = 2000;
  o.max_lease_polls_per_s = 1000;
  return o;
}

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

TEST(FleetPaceTest, ASmallFleetKeepsTheConfiguredIntervals) {
  FleetPace pace(Defaults());
  const Pace p = pace.Tell(2000, kT0);
  EXPECT_EQ(p.heartbeat, absl::Seconds(1));
  EXPECT_EQ(p.lease_poll, absl::Seconds(2));  // 2,000 agents at 1,000/s
  EXPECT_EQ(p.lease_timeout, absl::Seconds(10));
  EXPECT_EQ(p.agent_timeout, absl::Seconds(30));
  EXPECT_EQ(p.gang_member_silence, absl::Seconds(5));
}

TEST(FleetPaceTest, ALargeFleetHeartbeatsLessAndItsLeasesLastLonger) {
  FleetPace pace(Defaults());
  const Pace p = pace.Tell(10000, kT0);
  // 10,000 agents at 2,000 heartbeats a second: every 5 s; a lease still
  // spans 10 heartbeats and an agent is gone after 30.
  EXPECT_EQ(p.heartbeat, absl::Seconds(5));
  EXPECT_EQ(p.lease_poll, absl::Seconds(10));
  EXPECT_EQ(p.lease_timeout, absl::Seconds(50));
  EXPECT_EQ(p.agent_timeout, absl::Seconds(150));
  EXPECT_EQ(p.gang_member_silence, absl::Seconds(20));
  EXPECT_EQ(LeaseGraceAfterOutage(p), absl::Seconds(200));  // 150 + 50
}

TEST(FleetPaceTest, TimeoutsShrinkOnlyOnceEveryAgentHeardTheShorterInterval) {
  FleetPace pace(Defaults());
  pace.Tell(10000, kT0);
  // Most of the fleet left: new agents hear 1 s, but an agent told 5 s may
  // not beat again for 5 s: its lease must still last 50 s.
  Pace p = pace.Tell(100, kT0 + absl::Seconds(1));
  EXPECT_EQ(p.heartbeat, absl::Seconds(1));
  EXPECT_EQ(p.lease_timeout, absl::Seconds(50));
  EXPECT_EQ(pace.Current(kT0 + absl::Seconds(10)).lease_timeout,
            absl::Seconds(50));
  // Two of the longer intervals after the shorter was first told.
  p = pace.Current(kT0 + absl::Seconds(11));
  EXPECT_EQ(p.lease_timeout, absl::Seconds(10));
  EXPECT_EQ(p.agent_timeout, absl::Seconds(30));
  // Growing again takes effect at once.
  EXPECT_EQ(pace.Tell(6000, kT0 + absl::Seconds(12)).lease_timeout,
            absl::Seconds(30));
}

TEST(FleetPaceTest, NoBudgetKeepsTheIntervalsWhateverTheFleet) {
  PlannerOptions o = Defaults();
  o.max_heartbeats_per_s = 0;
  o.max_lease_polls_per_s = 0;
  FleetPace pace(o);
  const Pace p = pace.Tell(100000, kT0);
  EXPECT_EQ(p.heartbeat, absl::Seconds(1));
  EXPECT_EQ(p.lease_poll, absl::Seconds(1));
  EXPECT_EQ(p.lease_timeout, absl::Seconds(10));
}

}  // namespace
}  // namespace tessera::service
