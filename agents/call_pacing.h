// How long an agent waits before its next periodic call to the planner (a
// heartbeat, a lease poll), so that a fleet paces itself (issue 32): the
// interval the planner told it, drawn with +-10% jitter (agents that
// started together do not stay in step), and, when the planner is slow,
// more: after a call that took a quarter of the interval or more (at least
// 100 ms), or failed as a busy or unreachable planner does
// (DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, UNAVAILABLE, ABORTED), the wait
// is drawn from [n/2, n] for n = interval x 2^k after the k-th such call in
// a row, at most max_stretch intervals, never below the interval. A quick
// answer starts again from the interval.
//
//   CallPacing pacing({.max_stretch = 2});
//   absl::Duration wait = pacing.After(interval, took, status);
#pragma once

#include <cstdint>
#include <random>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace tessera::agents {

struct CallPacingOptions {
  // The most a slow planner stretches the wait, in intervals (>= 1). A
  // heartbeat's stretch must stay well within what the planner waits for
  // it (4 intervals before it ends a gang's lease: fleet_pace.h).
  double max_stretch = 2;
  double jitter = 0.1;  // the wait is interval x [1 - jitter, 1 + jitter]
};

// Whether `status` says the planner is busy or away (worth a slower retry).
bool PlannerSlowOrAway(const absl::Status& status);

// The rule, for a caller that keeps its own count of slow calls in a row
// and its own generator (the fleet bench's thousands of agents).
absl::Duration PacedWait(const CallPacingOptions& options,
                         absl::Duration interval, absl::Duration took,
                         const absl::Status& status, int64_t& slow_calls,
                         std::mt19937_64& rng);

// Not thread-safe: one per periodic call.
class CallPacing {
 public:
  explicit CallPacing(const CallPacingOptions& options);
  CallPacing(const CallPacingOptions& options, uint64_t seed);

  // The wait before the next call, after one that took `took` and ended with
  // `status`, for the planner's `interval`.
  absl::Duration After(absl::Duration interval, absl::Duration took,
                       const absl::Status& status);
  // Calls in a row that found the planner slow.
  int64_t slow_calls() const { return slow_calls_; }

 private:
  CallPacingOptions options_;
  int64_t slow_calls_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace tessera::agents
