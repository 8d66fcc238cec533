// The fleet paces itself (issue 32): the planner tells each agent how often
// to heartbeat and poll for trials (RegisterResponse, every
// HeartbeatResponse), longer as the fleet grows, so that the fleet's calls
// stay within what the planner plans for, and its timeouts grow with them:
//
//   heartbeat interval = max(PlannerOptions::heartbeat_interval,
//                            active agents / max_heartbeats_per_s)
//   lease poll interval = max(PlannerOptions::lease_poll_interval,
//                             active agents / max_lease_polls_per_s)
//   lease timeout, agent timeout = PlannerOptions' x the heartbeat's
//                                  stretch (told / configured interval)
//   gang member silence = max(4 heartbeat intervals, 5 s)
//
// so that a lease still spans as many heartbeats (10 by default) whatever
// the fleet's size. The timeouts follow the longest heartbeat interval told
// recently, not the current one: when the fleet shrinks, an agent keeps its
// longer interval until its next heartbeat, and the timeouts shrink only
// once every agent has heard the shorter one (two of the longer intervals
// after the planner began telling it).
//
// At the defaults (1 s, 2,000 heartbeats and polls a second) up to 2,000
// agents keep the 1 s intervals; 10,000 agents heartbeat every 5 s, with
// leases of 50 s and an agent timeout of 150 s.
//
//   FleetPace pace(options);
//   Pace told = pace.Tell(liveness.active_count(), now);
//   response.set_heartbeat_interval_ms(ToInt64Milliseconds(told.heartbeat));
#pragma once

#include <algorithm>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "service/planner_options.h"

namespace tessera::service {

// What the planner tells agents, and the timeouts that hold for them.
struct Pace {
  absl::Duration heartbeat;
  absl::Duration lease_poll;
  absl::Duration lease_timeout;
  absl::Duration agent_timeout;
  absl::Duration gang_member_silence;
};

// After an outage of the planner (a restart, a store that refused writes, a
// stopped process: outage_watch.h), how long every lease lasts from its
// return: the agent timeout plus a lease timeout, at the fleet's pace. An
// agent backs off its reconnection by up to about the agent timeout (it is
// not gone before that), and then needs a lease timeout of working planner
// to heartbeat: with only the longer of the two, an agent whose backoff had
// grown to the agent timeout lost its lease on a loaded machine
// (ResultSurvivalTest.PlannerRestartsInARowLoseNoResult failed 2 runs of 4
// with the cores busy).
inline absl::Duration LeaseGraceAfterOutage(const Pace& pace) {
  return pace.agent_timeout + pace.lease_timeout;
}

// Thread-safe.
class FleetPace {
 public:
  explicit FleetPace(const PlannerOptions& options);

  // The intervals to tell an agent now, with a fleet of `active_agents`
  // (remembered: the timeouts follow what was told), and the timeouts.
  Pace Tell(int64_t active_agents, absl::Time now);
  // The timeouts (and the intervals last told) at `now`, telling nothing.
  Pace Current(absl::Time now);

 private:
  // The intervals for a fleet of `active_agents`.
  absl::Duration HeartbeatFor(int64_t active_agents) const;
  absl::Duration PollFor(int64_t active_agents) const;
  // Lets longest_ shrink once every agent heard a shorter interval.
  void Settle(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Pace PaceLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const absl::Duration heartbeat_;  // as configured
  const absl::Duration lease_poll_;
  const absl::Duration lease_timeout_;
  const absl::Duration agent_timeout_;
  const double max_heartbeats_per_s_;
  const double max_lease_polls_per_s_;

  absl::Mutex mu_;
  // The longest heartbeat interval any agent may still be using.
  absl::Duration longest_ ABSL_GUARDED_BY(mu_);
  // Since when only shorter intervals were told (InfiniteFuture: the
  // last told was the longest), and the longest of those.
  absl::Time shorter_since_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  absl::Duration longest_shorter_ ABSL_GUARDED_BY(mu_);
  absl::Duration last_heartbeat_ ABSL_GUARDED_BY(mu_);
  absl::Duration last_poll_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::service
