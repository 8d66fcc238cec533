// Vocabulary-parallel cross-entropy (Megatron-LM, Shoeybi et al. 2019) on the
// GPU in backend.h's three steps, one block per token row: the row max, the
// sum of exponentials and the target's logit, then the loss and the logits'
// gradient. L is the logits' type and G the gradient's (f32 or bf16); the
// statistics are f32. The gradient may alias the logits (same type): each
// element is read and written by one thread.
//
// defines: LogitsRowMaxKernel, LaunchLogitsRowMax,
//          LogitsSumExpAndTargetKernel, LaunchLogitsSumExpAndTarget,
//          CrossEntropyBackwardKernel, LaunchCrossEntropyBackward
//
//   LaunchLogitsRowMax<float>(logits, tokens, vocab_rows, row_max, stream);
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "executor/cuda/device_utils.cuh"
#include "executor/cuda/launch_config.h"

namespace tessera::executor::cuda {

// row_max[t] = max_v logits[t, v] (-inf for an empty shard).
template <typename L>
__global__ void LogitsRowMaxKernel(const L* logits, int64_t tokens,
                                   int64_t vocab_rows, float* row_max) {
  __shared__ float shared[32];
  for (int64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
    const L* row = logits + t * vocab_rows;
    float mx = NegInf();
    for (int64_t v = threadIdx.x; v < vocab_rows; v += blockDim.x) {
      mx = fmaxf(mx, ToFloat(row[v]));
    }
    mx = BlockMax(mx, shared);
    if (threadIdx.x == 0) row_max[t] = mx;
  }
}

template <typename L>
cudaError_t LaunchLogitsRowMax(const L* logits, int64_t tokens,
                               int64_t vocab_rows, float* row_max,
                               cudaStream_t stream) {
  if (tokens <= 0) return cudaSuccess;
  LogitsRowMaxKernel<L>
      <<<RowBlocks(tokens), RowThreads(vocab_rows), 0, stream>>>(
          logits, tokens, vocab_rows, row_max);
  return cudaGetLastError();
}

// stats[t] = sum_v exp(logits[t,v] - row_max[t]); stats[tokens + t] = the
// target's logit when it is in [vocab_begin, vocab_begin + vocab_rows), else
// 0.
template <typename L>
__global__ void LogitsSumExpAndTargetKernel(const L* logits,
                                            const int32_t* targets,
                                            const float* row_max,
                                            int64_t tokens, int64_t vocab_begin,
                                            int64_t vocab_rows, float* stats) {
  __shared__ float shared[32];
  for (int64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
    const L* row = logits + t * vocab_rows;
    const float mx = row_max[t];
    float sum = 0.0f;
    for (int64_t v = threadIdx.x; v < vocab_rows; v += blockDim.x) {
      sum += expf(ToFloat(row[v]) - mx);
    }
    sum = BlockSum(sum, shared);
    if (threadIdx.x == 0) {
      stats[t] = sum;
      const int64_t local = static_cast<int64_t>(targets[t]) - vocab_begin;
      stats[tokens + t] =
          local >= 0 && local < vocab_rows ? ToFloat(row[local]) : 0.0f;
    }
  }
}

template <typename L>
cudaError_t LaunchLogitsSumExpAndTarget(const L* logits, const int32_t* targets,
                                        const float* row_max, int64_t tokens,
                                        int64_t vocab_begin, int64_t vocab_rows,
                                        float* stats, cudaStream_t stream) {
  if (tokens <= 0) return cudaSuccess;
  LogitsSumExpAndTargetKernel<L>
      <<<RowBlocks(tokens), RowThreads(vocab_rows), 0, stream>>>(
          logits, targets, row_max, tokens, vocab_begin, vocab_rows, stats);
  return cudaGetLastError();
}

// loss[t] = log(stats[0][t]) + row_max[t] - stats[1][t]; dlogits = grad_scale
// * (softmax - onehot(target)) over the shard.
template <typename L, typename G>
__global__ void CrossEntropyBackwardKernel(
    const L* logits, const int32_t* targets, const float* row_max,
    const float* stats, int64_t tokens, int64_t vocab_begin, int64_t vocab_rows,
    float grad_scale, float* loss, G* dlogits) {
  for (int64_t t = blockIdx.x; t < tokens; t += gridDim.x) {
    const float mx = row_max[t];
    const float sum = stats[t];
    if (threadIdx.x == 0) loss[t] = logf(sum) + mx - stats[tokens + t];
    const float scale = grad_scale / sum;
    const int64_t local = static_cast<int64_t>(targets[t]) - vocab_begin;
    const L* row = logits + t * vocab_rows;
    G* drow = dlogits + t * vocab_rows;
    for (int64_t v = threadIdx.x; v < vocab_rows; v += blockDim.x) {
      float d = expf(ToFloat(row[v]) - mx) * scale;
      if (v == local) d -= grad_scale;
      drow[v] = FromFloat<G>(d);
    }
  }
}

template <typename L, typename G>
cudaError_t LaunchCrossEntropyBackward(const L* logits, const int32_t* targets,
                                       const float* row_max, const float* stats,
                                       int64_t tokens, int64_t vocab_begin,
                                       int64_t vocab_rows, float grad_scale,
                                       float* loss, G* dlogits,
                                       cudaStream_t stream) {
  if (tokens <= 0) return cudaSuccess;
  CrossEntropyBackwardKernel<L, G>
      <<<RowBlocks(tokens), RowThreads(vocab_rows), 0, stream>>>(
          logits, targets, row_max, stats, tokens, vocab_begin, vocab_rows,
          grad_scale, loss, dlogits);
  return cudaGetLastError();
}

}  // namespace tessera::executor::cuda
