#include "service/fleet_pace.h"

#include <algorithm>

namespace tessera::service {
namespace {

// A gang member silent this many heartbeat intervals (at least 5 s) ends its
// gang's lease (Leases::GangMemberSilence): agents wait 8 intervals for that
// decision (agents/agent.h), and back off at most 2 intervals.
constexpr int kGangSilenceHeartbeats = 4;
constexpr absl::Duration kMinGangSilence = absl::Seconds(5);

// `base`, or the interval at which `agents` make at most `per_s` calls a
// second in all, whichever is longer; `per_s` <= 0: `base`.
absl::Duration Stretched(absl::Duration base, int64_t agents, double per_s) {
  if (!(per_s > 0) || agents <= 0) return base;
  return std::max(base, absl::Seconds(static_cast<double>(agents) / per_s));
}

}  // namespace

FleetPace::FleetPace(const PlannerOptions& options)
    : heartbeat_(options.heartbeat_interval),
      lease_poll_(options.lease_poll_interval),
      lease_timeout_(options.lease_timeout),
      agent_timeout_(options.agent_timeout),
      max_heartbeats_per_s_(options.max_heartbeats_per_s),
      max_lease_polls_per_s_(options.max_lease_polls_per_s),
      longest_(options.heartbeat_interval),
      longest_shorter_(absl::ZeroDuration()),
      last_heartbeat_(options.heartbeat_interval),
      last_poll_(options.lease_poll_interval) {}

absl::Duration FleetPace::HeartbeatFor(int64_t active_agents) const {
  return Stretched(heartbeat_, active_agents, max_heartbeats_per_s_);
}

absl::Duration FleetPace::PollFor(int64_t active_agents) const {
  return Stretched(lease_poll_, active_agents, max_lease_polls_per_s_);
}

void FleetPace::Settle(absl::Time now) {
  if (shorter_since_ != absl::InfiniteFuture() &&
      now - shorter_since_ >= 2 * longest_) {
    longest_ = std::max(longest_shorter_, heartbeat_);
    shorter_since_ = absl::InfiniteFuture();
    longest_shorter_ = absl::ZeroDuration();
  }
}

Pace FleetPace::PaceLocked() const {
  const double stretch = absl::FDivDuration(longest_, heartbeat_);
  return Pace{
      .heartbeat = last_heartbeat_,
      .lease_poll = last_poll_,
      .lease_timeout = lease_timeout_ * std::max(1.0, stretch),
      .agent_timeout = agent_timeout_ * std::max(1.0, stretch),
      .gang_member_silence =
          std::max(kGangSilenceHeartbeats * longest_, kMinGangSilence)};
}

Pace FleetPace::Tell(int64_t active_agents, absl::Time now) {
  const absl::Duration heartbeat = HeartbeatFor(active_agents);
  const absl::Duration poll = PollFor(active_agents);
  absl::MutexLock lock(&mu_);
  Settle(now);
  if (heartbeat >= longest_) {
    longest_ = heartbeat;
    shorter_since_ = absl::InfiniteFuture();
    longest_shorter_ = absl::ZeroDuration();
  } else {
    if (shorter_since_ == absl::InfiniteFuture()) shorter_since_ = now;
    longest_shorter_ = std::max(longest_shorter_, heartbeat);
  }
  last_heartbeat_ = heartbeat;
  last_poll_ = poll;
  return PaceLocked();
}

Pace FleetPace::Current(absl::Time now) {
  absl::MutexLock lock(&mu_);
  Settle(now);
  return PaceLocked();
}

}  // namespace tessera::service
