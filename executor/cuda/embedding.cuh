// Vocabulary-parallel token embedding on the GPU: a gather of the local
// table's rows (zeros for tokens outside the shard) and its backward, a
// scatter-add into the f32 gradient table with atomicAdd (rows of repeated
// tokens add in an unspecified order: float sums that may differ in the last
// bits from run to run).
//
// defines: EmbeddingForwardKernel, LaunchEmbeddingForward,
//          EmbeddingBackwardKernel, LaunchEmbeddingBackward
//
//   LaunchEmbeddingForward(tokens, table, n_tokens, vocab_begin, vocab_rows,
//                          hidden, out, stream);
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "executor/cuda/device_utils.cuh"
#include "executor/cuda/launch_config.h"

namespace tessera::executor::cuda {

// out[t,:] = table[tokens[t] - vocab_begin, :] when local, else 0.
__global__ void EmbeddingForwardKernel(const int32_t* tokens, const bf16* table,
                                       int64_t n_tokens, int64_t vocab_begin,
                                       int64_t vocab_rows, int64_t hidden,
                                       bf16* out) {
  for (int64_t idx = GridIndex(); idx < n_tokens * hidden;
       idx += GridStride()) {
    const int64_t t = idx / hidden, c = idx % hidden;
    const int64_t row = static_cast<int64_t>(tokens[t]) - vocab_begin;
    out[idx] = row >= 0 && row < vocab_rows ? table[row * hidden + c]
                                            : FromFloat<bf16>(0.0f);
  }
}

inline cudaError_t LaunchEmbeddingForward(const int32_t* tokens,
                                          const bf16* table, int64_t n_tokens,
                                          int64_t vocab_begin,
                                          int64_t vocab_rows, int64_t hidden,
                                          bf16* out, cudaStream_t stream) {
  if (n_tokens <= 0) return cudaSuccess;
  const Launch l = ElementwiseLaunch(n_tokens * hidden);
  EmbeddingForwardKernel<<<l.blocks, l.threads, 0, stream>>>(
      tokens, table, n_tokens, vocab_begin, vocab_rows, hidden, out);
  return cudaGetLastError();
}

// dtable[tokens[t] - vocab_begin, :] += dout[t, :] for local tokens.
__global__ void EmbeddingBackwardKernel(const int32_t* tokens, const bf16* dout,
                                        int64_t n_tokens, int64_t vocab_begin,
                                        int64_t vocab_rows, int64_t hidden,
                                        float* dtable) {
  for (int64_t idx = GridIndex(); idx < n_tokens * hidden;
       idx += GridStride()) {
    const int64_t t = idx / hidden, c = idx % hidden;
    const int64_t row = static_cast<int64_t>(tokens[t]) - vocab_begin;
    if (row < 0 || row >= vocab_rows) continue;
    atomicAdd(dtable + row * hidden + c, ToFloat(dout[idx]));
  }
}

inline cudaError_t LaunchEmbeddingBackward(const int32_t* tokens,
                                           const bf16* dout, int64_t n_tokens,
                                           int64_t vocab_begin,
                                           int64_t vocab_rows, int64_t hidden,
                                           float* dtable, cudaStream_t stream) {
  if (n_tokens <= 0) return cudaSuccess;
  const Launch l = ElementwiseLaunch(n_tokens * hidden);
  EmbeddingBackwardKernel<<<l.blocks, l.threads, 0, stream>>>(
      tokens, dout, n_tokens, vocab_begin, vocab_rows, hidden, dtable);
  return cudaGetLastError();
}

}  // namespace tessera::executor::cuda
