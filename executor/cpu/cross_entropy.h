// Cross-entropy over a vocabulary-parallel shard of the logits (Megatron-LM's
// vocab-parallel cross-entropy, Shoeybi et al. 2019): each rank holds the
// columns [vocab_begin, vocab_begin + vocab_rows); the engine combines ranks
// between the three steps (max, then sums, over the tensor-parallel group).
// T is float or double.
//
// defines: LogitsRowMax, LogitsSumExpAndTarget, CrossEntropyBackward
//
//   cpu::LogitsRowMax<float>(logits, tokens, vocab_rows, row_max);
//   // ... AllReduce(max) row_max over tp ...
//   cpu::LogitsSumExpAndTarget<float>(logits, targets, row_max, tokens,
//                                     vocab_begin, vocab_rows, stats);
//   // ... AllReduce(sum) stats over tp ...
//   cpu::CrossEntropyBackward<float>(logits, targets, row_max, stats, tokens,
//                                    vocab_begin, vocab_rows, 1.0f / tokens,
//                                    loss, dlogits);
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "executor/cpu/fast_exp.h"

namespace tessera::executor::cpu {

// row_max[t] = max_v logits[t,v] over the local [tokens, vocab_rows] shard
// (-inf for an empty shard).
template <typename T>
void LogitsRowMax(const T* logits, int64_t tokens, int64_t vocab_rows,
                  T* row_max) {
  for (int64_t t = 0; t < tokens; ++t) {
    const T* row = logits + t * vocab_rows;
    T mx = -std::numeric_limits<T>::infinity();
    for (int64_t v = 0; v < vocab_rows; ++v) mx = row[v] > mx ? row[v] : mx;
    row_max[t] = mx;
  }
}

// stats [2, tokens]: stats[0][t] = sum_v exp(logits[t,v] - row_max[t]) over
// the shard; stats[1][t] = logits[t, targets[t] - vocab_begin] when the
// target is in the shard, else 0. row_max is the global (all-shard) max.
template <typename T>
void LogitsSumExpAndTarget(const T* logits, const int32_t* targets,
                           const T* row_max, int64_t tokens,
                           int64_t vocab_begin, int64_t vocab_rows, T* stats) {
  constexpr int64_t kChunk = 512;
  for (int64_t t = 0; t < tokens; ++t) {
    const T* row = logits + t * vocab_rows;
    double sum = 0;
    T chunk[kChunk];
    for (int64_t v0 = 0; v0 < vocab_rows; v0 += kChunk) {
      const int64_t len = std::min(kChunk, vocab_rows - v0);
      sum += ExpShiftedSum(row + v0, len, row_max[t], chunk);
    }
    stats[t] = T(sum);
    const int64_t local = static_cast<int64_t>(targets[t]) - vocab_begin;
    stats[tokens + t] = (local >= 0 && local < vocab_rows) ? row[local] : T(0);
  }
}

// loss[t] = log(stats[0][t]) + row_max[t] - stats[1][t] (the full-vocabulary
// -log softmax(target)); dlogits [tokens, vocab_rows] = grad_scale *
// (softmax - onehot(target)) on the shard. dlogits may alias logits.
template <typename T>
void CrossEntropyBackward(const T* logits, const int32_t* targets,
                          const T* row_max, const T* stats, int64_t tokens,
                          int64_t vocab_begin, int64_t vocab_rows, T grad_scale,
                          T* loss, T* dlogits) {
  for (int64_t t = 0; t < tokens; ++t) {
    const T mx = row_max[t];
    const T sum = stats[t];
    loss[t] = T(std::log(sum)) + mx - stats[tokens + t];
    const T scale = grad_scale / sum;
    const T* row = logits + t * vocab_rows;
    T* drow = dlogits + t * vocab_rows;
    ExpShifted(row, vocab_rows, mx, drow);  // drow may be row
    for (int64_t v = 0; v < vocab_rows; ++v) drow[v] *= scale;
    const int64_t local = static_cast<int64_t>(targets[t]) - vocab_begin;
    if (local >= 0 && local < vocab_rows) drow[local] -= grad_scale;
  }
}

}  // namespace tessera::executor::cpu
