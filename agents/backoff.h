// Exponential backoff with jitter, for retrying a planner that cannot be
// reached: the nominal delay doubles from `initial` to `max`, and each delay
// is drawn uniformly from the upper half of the nominal one ("equal jitter",
// so agents that lost the planner together do not retry in lockstep), never
// below `initial` nor above `max`.
//
//   Backoff backoff(BackoffOptions{});  // 100 ms .. 5 s
//   while (!TryConnect().ok()) Sleep(backoff.Next());
//   backoff.Reset();
#pragma once

#include <cstdint>
#include <random>

#include "absl/time/time.h"

namespace tessera::agents {

struct BackoffOptions {
  absl::Duration initial = absl::Milliseconds(100);
  absl::Duration max = absl::Seconds(5);
  double multiplier = 2.0;  // nominal growth per failed attempt
};

// Not thread-safe: one per retry loop.
class Backoff {
 public:
  // `seed` fixes the jitter (tests); the default draws one from the system.
  explicit Backoff(const BackoffOptions& options);
  Backoff(const BackoffOptions& options, uint64_t seed);

  // The delay before the next attempt; each call counts one failure.
  absl::Duration Next();
  // The nominal delay of the next call to Next() (its upper bound).
  absl::Duration Nominal() const;
  // After a success: the next delay starts from `initial` again.
  void Reset() { attempts_ = 0; }
  int64_t attempts() const { return attempts_; }

 private:
  BackoffOptions options_;
  int64_t attempts_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace tessera::agents
