#include "agents/call_pacing.h"

#include <algorithm>
#include <cmath>

namespace tessera::agents {

bool PlannerSlowOrAway(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kAborted:
      return true;
    default:
      return false;
  }
}

CallPacing::CallPacing(const CallPacingOptions& options)
    : CallPacing(options, std::random_device{}()) {}

CallPacing::CallPacing(const CallPacingOptions& options, uint64_t seed)
    : options_(options), rng_(seed) {}

absl::Duration PacedWait(const CallPacingOptions& options,
                         absl::Duration interval, absl::Duration took,
                         const absl::Status& status, int64_t& slow_calls,
                         std::mt19937_64& rng) {
  const bool slow =
      PlannerSlowOrAway(status) ||
      took >= std::max(interval / 4, absl::Milliseconds(100));
  if (!slow) {
    slow_calls = 0;
    const double jitter = std::clamp(options.jitter, 0.0, 0.5);
    std::uniform_real_distribution<double> spread(1 - jitter, 1 + jitter);
    return interval * spread(rng);
  }
  ++slow_calls;
  // Equal jitter over a nominal wait that doubles with each slow call.
  const double nominal = std::min(
      std::pow(2.0, static_cast<double>(std::min<int64_t>(slow_calls, 62))),
      std::max(options.max_stretch, 1.0));
  std::uniform_real_distribution<double> half(0.5, 1.0);
  return std::max(interval, interval * (nominal * half(rng)));
}

absl::Duration CallPacing::After(absl::Duration interval, absl::Duration took,
                                 const absl::Status& status) {
  return PacedWait(options_, interval, took, status, slow_calls_, rng_);
}

}  // namespace tessera::agents
