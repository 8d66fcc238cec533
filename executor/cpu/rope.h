// Rotary position embedding (Su et al. 2021) on the CPU, rotate-half form (as
// in Llama's reference code and Hugging Face's), applied while splitting the
// fused QKV projection's output into q, k and v. T is float or double.
//
// defines: RopeQkvForward, RopeQkvBackward
//
//   // qkv [tokens, (heads + 2 kv_heads) head_dim] -> q, k (rotated), v.
//   cpu::RopeQkvForward<float>(qkv, positions, tokens, heads, kv_heads,
//                              head_dim, 10000.0, q, k, v);
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace tessera::executor::cpu {
namespace internal {

// cos/sin [half] of angle_i = position * theta^(-2i/head_dim) (Su et al.
// 2021, eq. 15), computed in double: positions reach 1e5 radians.
template <typename T>
void RopeAngles(int32_t position, int64_t head_dim, double theta, T* cos_out,
                T* sin_out) {
  const int64_t half = head_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double inv_freq =
        std::pow(theta, -2.0 * double(i) / double(head_dim));
    const double angle = double(position) * inv_freq;
    cos_out[i] = T(std::cos(angle));
    sin_out[i] = T(std::sin(angle));
  }
}

// Rotates `heads` consecutive heads of head_dim: by +angle (forward) or
// -angle (sign = -1, the inverse and the transpose).
template <typename T>
void RotateHeads(const T* src, int64_t heads, int64_t head_dim, const T* cos_a,
                 const T* sin_a, T sign, T* dst) {
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < heads; ++h) {
    const T* x = src + h * head_dim;
    T* y = dst + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      const T c = cos_a[i];
      const T s = sign * sin_a[i];
      const T x1 = x[i];
      const T x2 = x[i + half];
      y[i] = x1 * c - x2 * s;
      y[i + half] = x2 * c + x1 * s;
    }
  }
}

}  // namespace internal

// qkv [tokens, (heads + 2*kv_heads) * head_dim], each row q heads, then k
// heads, then v heads. Writes q [tokens, heads*head_dim], k and v [tokens,
// kv_heads*head_dim], rotating q and k by position: with half = head_dim/2,
// out[i] = x[i] cos - x[i+half] sin, out[i+half] = x[i+half] cos + x[i] sin.
// positions [tokens] are global positions. head_dim is even.
template <typename T>
void RopeQkvForward(const T* qkv, const int32_t* positions, int64_t tokens,
                    int64_t heads, int64_t kv_heads, int64_t head_dim,
                    double theta, T* q, T* k, T* v) {
  const int64_t q_dim = heads * head_dim;
  const int64_t kv_dim = kv_heads * head_dim;
  const int64_t row = q_dim + 2 * kv_dim;
  std::vector<T> cos_a(head_dim / 2), sin_a(head_dim / 2);
  for (int64_t t = 0; t < tokens; ++t) {
    internal::RopeAngles(positions[t], head_dim, theta, cos_a.data(),
                         sin_a.data());
    const T* src = qkv + t * row;
    internal::RotateHeads(src, heads, head_dim, cos_a.data(), sin_a.data(),
                          T(1), q + t * q_dim);
    internal::RotateHeads(src + q_dim, kv_heads, head_dim, cos_a.data(),
                          sin_a.data(), T(1), k + t * kv_dim);
    std::copy_n(src + q_dim + kv_dim, kv_dim, v + t * kv_dim);
  }
}

// The transpose (a rotation's inverse): dqkv [tokens, (heads + 2*kv_heads) *
// head_dim] = [R^T dq, R^T dk, dv] per token; written, not added.
template <typename T>
void RopeQkvBackward(const T* dq, const T* dk, const T* dv,
                     const int32_t* positions, int64_t tokens, int64_t heads,
                     int64_t kv_heads, int64_t head_dim, double theta,
                     T* dqkv) {
  const int64_t q_dim = heads * head_dim;
  const int64_t kv_dim = kv_heads * head_dim;
  const int64_t row = q_dim + 2 * kv_dim;
  std::vector<T> cos_a(head_dim / 2), sin_a(head_dim / 2);
  for (int64_t t = 0; t < tokens; ++t) {
    internal::RopeAngles(positions[t], head_dim, theta, cos_a.data(),
                         sin_a.data());
    T* dst = dqkv + t * row;
    internal::RotateHeads(dq + t * q_dim, heads, head_dim, cos_a.data(),
                          sin_a.data(), T(-1), dst);
    internal::RotateHeads(dk + t * kv_dim, kv_heads, head_dim, cos_a.data(),
                          sin_a.data(), T(-1), dst + q_dim);
    std::copy_n(dv + t * kv_dim, kv_dim, dst + q_dim + kv_dim);
  }
}

}  // namespace tessera::executor::cpu
