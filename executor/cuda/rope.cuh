// Rotary position embedding (Su et al. 2021), rotate-half form, on the GPU,
// fused with the split of the QKV projection's rows into q, k and v. One
// thread per (token, i < head_dim/2) computes that angle once (in double, as
// the CPU reference: positions reach 1e5 radians) and rotates element pair
// (i, i + half) of every q and k head of the token, and copies that pair of
// every v head.
//
// defines: RopeQkvForwardKernel, LaunchRopeQkvForward,
//          RopeQkvBackwardKernel, LaunchRopeQkvBackward
//
//   LaunchRopeQkvForward(qkv, positions, tokens, heads, kv_heads, head_dim,
//                        10000.0f, q, k, v, stream);
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "executor/cuda/device_utils.cuh"
#include "executor/cuda/launch_config.h"

namespace tessera::executor::cuda {

// cos and sin of position * theta^(-2i/head_dim) (Su et al. 2021, eq. 15).
__device__ __forceinline__ void RopeAngle(int32_t position, int64_t i,
                                          int64_t head_dim, float theta,
                                          float* cos_a, float* sin_a) {
  const double inv_freq =
      pow(static_cast<double>(theta),
          -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
  double s, c;
  sincos(static_cast<double>(position) * inv_freq, &s, &c);
  *cos_a = static_cast<float>(c);
  *sin_a = static_cast<float>(s);
}

// q, k, v from qkv rows [q heads | k heads | v heads]:
// out[i] = x[i] cos - x[i+half] sin, out[i+half] = x[i+half] cos + x[i] sin.
__global__ void RopeQkvForwardKernel(const bf16* qkv, const int32_t* positions,
                                     int64_t tokens, int64_t heads,
                                     int64_t kv_heads, int64_t head_dim,
                                     float theta, bf16* q, bf16* k, bf16* v) {
  const int64_t half = head_dim / 2;
  const int64_t q_dim = heads * head_dim, kv_dim = kv_heads * head_dim;
  const int64_t row = q_dim + 2 * kv_dim;
  for (int64_t idx = GridIndex(); idx < tokens * half; idx += GridStride()) {
    const int64_t t = idx / half, i = idx % half;
    float c, s;
    RopeAngle(positions[t], i, head_dim, theta, &c, &s);
    const bf16* src = qkv + t * row;
    for (int64_t h = 0; h < heads; ++h) {
      const float x1 = ToFloat(src[h * head_dim + i]);
      const float x2 = ToFloat(src[h * head_dim + i + half]);
      bf16* dst = q + t * q_dim + h * head_dim;
      dst[i] = FromFloat<bf16>(x1 * c - x2 * s);
      dst[i + half] = FromFloat<bf16>(x2 * c + x1 * s);
    }
    for (int64_t h = 0; h < kv_heads; ++h) {
      const bf16* ks = src + q_dim + h * head_dim;
      const float x1 = ToFloat(ks[i]);
      const float x2 = ToFloat(ks[i + half]);
      bf16* dst = k + t * kv_dim + h * head_dim;
      dst[i] = FromFloat<bf16>(x1 * c - x2 * s);
      dst[i + half] = FromFloat<bf16>(x2 * c + x1 * s);
      const bf16* vs = src + q_dim + kv_dim + h * head_dim;
      bf16* vd = v + t * kv_dim + h * head_dim;
      vd[i] = vs[i];
      vd[i + half] = vs[i + half];
    }
  }
}

inline cudaError_t LaunchRopeQkvForward(const bf16* qkv,
                                        const int32_t* positions,
                                        int64_t tokens, int64_t heads,
                                        int64_t kv_heads, int64_t head_dim,
                                        float theta, bf16* q, bf16* k, bf16* v,
                                        cudaStream_t stream) {
  if (tokens <= 0) return cudaSuccess;
  const Launch l = ElementwiseLaunch(tokens * (head_dim / 2));
  RopeQkvForwardKernel<<<l.blocks, l.threads, 0, stream>>>(
      qkv, positions, tokens, heads, kv_heads, head_dim, theta, q, k, v);
  return cudaGetLastError();
}

// The transpose (rotation by -angle): dqkv = [R^T dq, R^T dk, dv] per token,
// written. G is the gradients' type (f32 or bf16).
template <typename G>
__global__ void RopeQkvBackwardKernel(const G* dq, const G* dk, const G* dv,
                                      const int32_t* positions, int64_t tokens,
                                      int64_t heads, int64_t kv_heads,
                                      int64_t head_dim, float theta,
                                      bf16* dqkv) {
  const int64_t half = head_dim / 2;
  const int64_t q_dim = heads * head_dim, kv_dim = kv_heads * head_dim;
  const int64_t row = q_dim + 2 * kv_dim;
  for (int64_t idx = GridIndex(); idx < tokens * half; idx += GridStride()) {
    const int64_t t = idx / half, i = idx % half;
    float c, s;
    RopeAngle(positions[t], i, head_dim, theta, &c, &s);
    bf16* dst = dqkv + t * row;
    for (int64_t h = 0; h < heads; ++h) {
      const G* src = dq + t * q_dim + h * head_dim;
      const float g1 = ToFloat(src[i]);
      const float g2 = ToFloat(src[i + half]);
      dst[h * head_dim + i] = FromFloat<bf16>(g1 * c + g2 * s);
      dst[h * head_dim + i + half] = FromFloat<bf16>(g2 * c - g1 * s);
    }
    for (int64_t h = 0; h < kv_heads; ++h) {
      const G* src = dk + t * kv_dim + h * head_dim;
      const float g1 = ToFloat(src[i]);
      const float g2 = ToFloat(src[i + half]);
      bf16* kd = dst + q_dim + h * head_dim;
      kd[i] = FromFloat<bf16>(g1 * c + g2 * s);
      kd[i + half] = FromFloat<bf16>(g2 * c - g1 * s);
      const G* vs = dv + t * kv_dim + h * head_dim;
      bf16* vd = dst + q_dim + kv_dim + h * head_dim;
      vd[i] = FromFloat<bf16>(ToFloat(vs[i]));
      vd[i + half] = FromFloat<bf16>(ToFloat(vs[i + half]));
    }
  }
}

template <typename G>
cudaError_t LaunchRopeQkvBackward(const G* dq, const G* dk, const G* dv,
                                  const int32_t* positions, int64_t tokens,
                                  int64_t heads, int64_t kv_heads,
                                  int64_t head_dim, float theta, bf16* dqkv,
                                  cudaStream_t stream) {
  if (tokens <= 0) return cudaSuccess;
  const Launch l = ElementwiseLaunch(tokens * (head_dim / 2));
  RopeQkvBackwardKernel<G><<<l.blocks, l.threads, 0, stream>>>(
      dq, dk, dv, positions, tokens, heads, kv_heads, head_dim, theta, dqkv);
  return cudaGetLastError();
}

}  // namespace tessera::executor::cuda
