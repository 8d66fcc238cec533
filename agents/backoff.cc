#include "agents/backoff.h"

#include <algorithm>
#include <cmath>

namespace tessera::agents {

Backoff::Backoff(const BackoffOptions& options)
    : Backoff(options, std::random_device{}()) {}

Backoff::Backoff(const BackoffOptions& options, uint64_t seed)
    : options_(options), rng_(seed) {}

absl::Duration Backoff::Nominal() const {
  // initial * multiplier^attempts, capped at max (the exponent is capped too,
  // so a long outage cannot overflow the double).
  const double growth =
      std::pow(std::max(options_.multiplier, 1.0),
               static_cast<double>(std::min<int64_t>(attempts_, 64)));
  const double nominal_s = absl::ToDoubleSeconds(options_.initial) * growth;
  return std::min(absl::Seconds(nominal_s), options_.max);
}

absl::Duration Backoff::Next() {
  const absl::Duration nominal = Nominal();
  ++attempts_;
  // Equal jitter (AWS Architecture Blog, "Exponential Backoff and Jitter",
  // 2015): uniform in [nominal / 2, nominal].
  std::uniform_real_distribution<double> half(0.5, 1.0);
  const absl::Duration delay = nominal * half(rng_);
  return std::clamp(delay, options_.initial, options_.max);
}

}  // namespace tessera::agents
