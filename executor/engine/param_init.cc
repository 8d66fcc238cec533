#include "executor/engine/param_init.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <thread>
#include <vector>

#include "core/usable_cpus.h"

namespace tessera::executor {
namespace {

// SplitMix64 finaliser (Steele, Lea & Flood 2014): a bijective 64-bit mix.
uint64_t Mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in (0, 1): 53 random bits, offset by half a step so never 0.
double Uniform(uint64_t bits) {
  return (static_cast<double>(bits >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

}  // namespace

uint64_t RandomBits(uint64_t seed, uint64_t stream, uint64_t index) {
  const uint64_t key = Mix(Mix(seed) ^ Mix(stream * 0x632BE59BD9B4E019ull));
  return Mix(key ^ Mix(index));
}

double NormalAt(uint64_t seed, uint64_t param_id, uint64_t index) {
  const uint64_t a = RandomBits(seed, param_id, 2 * index);
  const uint64_t b = RandomBits(seed, param_id, 2 * index + 1);
  // Box-Muller: one normal from two uniforms.
  return std::sqrt(-2.0 * std::log(Uniform(a))) *
         std::cos(2.0 * std::numbers::pi * Uniform(b));
}

void FillNormalSlice(uint64_t seed, uint64_t param_id, double std,
                     int64_t global_cols, int64_t r0, int64_t r1, int64_t c0,
                     int64_t c1, float* out) {
  const int64_t width = c1 - c0;
  auto fill_rows = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      for (int64_t c = c0; c < c1; ++c) {
        const uint64_t index = static_cast<uint64_t>(r * global_cols + c);
        out[(r - r0) * width + (c - c0)] =
            static_cast<float>(std * NormalAt(seed, param_id, index));
      }
    }
  };
  // About 40 ns an element on one core: a 1B model's weights took 35 s on
  // one thread (the first H100 run's 1B trials ran out of time in it). Each
  // element depends only on its index, so row ranges fill in parallel with
  // the same values; slices under 2^18 elements stay on the calling thread.
  constexpr int64_t kElementsPerThread = int64_t{1} << 18;
  const int64_t rows = r1 - r0;
  const int64_t threads = std::min<int64_t>(
      {rows, std::max<int64_t>(1, rows * width / kElementsPerThread),
       int64_t{UsableCpuCount()}});
  if (threads <= 1) {
    fill_rows(r0, r1);
    return;
  }
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (int64_t t = 0; t < threads; ++t) {
    workers.emplace_back(fill_rows, r0 + rows * t / threads,
                         r0 + rows * (t + 1) / threads);
  }
  for (std::thread& w : workers) w.join();
}

}  // namespace tessera::executor
