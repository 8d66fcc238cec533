#include "replay/replay_noise.h"

#include <cmath>
#include <numbers>

namespace tessera::replay {
namespace {

// SplitMix64 (Steele, Lea and Flood 2014): a full-period generator whose
// outputs are well mixed from any state.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t state) : state_(state) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1): 53 bits, never 0.
  double Uniform() {
    return (static_cast<double>(Next() >> 11) + 0.5) * 0x1.0p-53;
  }
  // Standard normal (Box-Muller, one of the pair).
  double Normal() {
    const double u1 = Uniform();
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) *
           std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  uint64_t state_;
};

}  // namespace

uint64_t NoiseStream(absl::string_view name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

NoiseDraws DrawNoise(uint64_t seed, uint64_t stream, uint64_t trial,
                     size_t steps) {
  SplitMix64 mix(seed);
  SplitMix64 rng(mix.Next() ^ (stream * 0x9e3779b97f4a7c15ULL) ^
                 (trial * 0xd1b54a32d192ed03ULL));
  NoiseDraws d;
  d.trial = rng.Normal();
  d.steps.reserve(steps);
  for (size_t i = 0; i < steps; ++i) d.steps.push_back(rng.Normal());
  return d;
}

}  // namespace tessera::replay
