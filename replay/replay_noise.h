// The measurement noise of replayed trials: standard normal draws that
// depend only on (seed, stream, trial), the same on every platform (a
// SplitMix64 sequence through Box-Muller; std::normal_distribution's
// algorithm is the standard library's choice), so a replay is repeatable.
//
//   NoiseDraws d = DrawNoise(seed, NoiseStream(group.name), trial_id, steps);
//   double step_s = true_step_s * std::exp(sd * d.trial);
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"

namespace tessera::replay {

struct NoiseDraws {
  double trial = 0;           // the trial's run-to-run draw
  std::vector<double> steps;  // one per step, around the trial's median
};

// A stable 64-bit stream id of a name (FNV-1a).
uint64_t NoiseStream(absl::string_view name);

// N(0, 1) draws for trial `trial` of stream `stream` under `seed`.
NoiseDraws DrawNoise(uint64_t seed, uint64_t stream, uint64_t trial,
                     size_t steps);

}  // namespace tessera::replay
