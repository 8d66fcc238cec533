// Deterministic parameter initialisation by global element index, so that every
// layout (whatever slice of a weight a rank holds) starts from the same model
// as the single-rank run, and no rank ever materialises a whole weight it does
// not hold.
//
//   // Rows [r0, r1) x columns [c0, c1) of global weight 7 ([rows x cols]):
//   FillNormalSlice(seed, /*param_id=*/7, /*std=*/0.02, cols, r0, r1, c0, c1,
//                   out);
#pragma once

#include <cstdint>

namespace tessera::executor {

// 64 random bits for element `index` of stream `stream` under `seed`
// (SplitMix64 hashing of the three; counter-based, so any element can be drawn
// alone, the same on every rank and platform).
uint64_t RandomBits(uint64_t seed, uint64_t stream, uint64_t index);

// A standard-normal value for element `index` of parameter `param_id` under
// `seed`: Box-Muller over RandomBits.
double NormalAt(uint64_t seed, uint64_t param_id, uint64_t index);

// Writes std * NormalAt(seed, param_id, r * global_cols + c) for rows [r0, r1)
// and columns [c0, c1) of a row-major global matrix with `global_cols` columns
// into `out`, row-major [(r1-r0) x (c1-c0)].
void FillNormalSlice(uint64_t seed, uint64_t param_id, double std,
                     int64_t global_cols, int64_t r0, int64_t r1, int64_t c0,
                     int64_t c1, float* out);

}  // namespace tessera::executor
