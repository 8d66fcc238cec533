// SwiGLU (Shazeer 2020) on the GPU over the fused [tokens, 2*ffn] gate/up
// projection: one thread per (token, j < ffn) reads gate and up and writes
// the output (forward) or both gradients (backward), so dgate_up may alias
// gate_up. Math in float, bf16 in and out.
//
// defines: SwiGluForwardKernel, LaunchSwiGluForward, SwiGluBackwardKernel,
//          LaunchSwiGluBackward
//
//   LaunchSwiGluForward(gate_up, tokens, ffn, out, stream);
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "executor/cuda/device_utils.cuh"
#include "executor/cuda/launch_config.h"

namespace tessera::executor::cuda {

__device__ __forceinline__ float Sigmoid(float x) {
  return 1.0f / (1.0f + expf(-x));
}

// out = silu(gate) * up, silu(x) = x sigmoid(x).
__global__ void SwiGluForwardKernel(const bf16* gate_up, int64_t tokens,
                                    int64_t ffn, bf16* out) {
  for (int64_t idx = GridIndex(); idx < tokens * ffn; idx += GridStride()) {
    const int64_t t = idx / ffn, j = idx % ffn;
    const float g = ToFloat(gate_up[t * 2 * ffn + j]);
    const float u = ToFloat(gate_up[t * 2 * ffn + ffn + j]);
    out[idx] = FromFloat<bf16>(g * Sigmoid(g) * u);
  }
}

inline cudaError_t LaunchSwiGluForward(const bf16* gate_up, int64_t tokens,
                                       int64_t ffn, bf16* out,
                                       cudaStream_t stream) {
  if (tokens <= 0) return cudaSuccess;
  const Launch l = ElementwiseLaunch(tokens * ffn);
  SwiGluForwardKernel<<<l.blocks, l.threads, 0, stream>>>(gate_up, tokens, ffn,
                                                          out);
  return cudaGetLastError();
}

// d up = dout silu(gate); d gate = dout up sigmoid(gate) (1 + gate (1 -
// sigmoid(gate))), the derivative of x sigmoid(x).
__global__ void SwiGluBackwardKernel(const bf16* dout, const bf16* gate_up,
                                     int64_t tokens, int64_t ffn,
                                     bf16* dgate_up) {
  for (int64_t idx = GridIndex(); idx < tokens * ffn; idx += GridStride()) {
    const int64_t t = idx / ffn, j = idx % ffn;
    const float g = ToFloat(gate_up[t * 2 * ffn + j]);
    const float u = ToFloat(gate_up[t * 2 * ffn + ffn + j]);
    const float d = ToFloat(dout[idx]);
    const float sig = Sigmoid(g);
    const float dg = d * u * sig * (1.0f + g * (1.0f - sig));
    const float du = d * g * sig;
    dgate_up[t * 2 * ffn + j] = FromFloat<bf16>(dg);
    dgate_up[t * 2 * ffn + ffn + j] = FromFloat<bf16>(du);
  }
}

inline cudaError_t LaunchSwiGluBackward(const bf16* dout, const bf16* gate_up,
                                        int64_t tokens, int64_t ffn,
                                        bf16* dgate_up, cudaStream_t stream) {
  if (tokens <= 0) return cudaSuccess;
  const Launch l = ElementwiseLaunch(tokens * ffn);
  SwiGluBackwardKernel<<<l.blocks, l.threads, 0, stream>>>(
      dout, gate_up, tokens, ffn, dgate_up);
  return cudaGetLastError();
}

}  // namespace tessera::executor::cuda
