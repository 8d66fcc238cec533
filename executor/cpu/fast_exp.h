// exp() for the CPU kernels: a branch-free float version that the compiler
// vectorizes (softmax and SiLU spend their time here), and std::exp for
// double, so that the double instantiations used by gradient checks stay
// exact to the last bit of libm.
//
// defines: Exp, ExpShifted, ExpShiftedSum
//
//   for (int64_t j = 0; j < n; ++j) p[j] = cpu::Exp(s[j] - row_max);
//   double denominator = cpu::ExpShiftedSum(s, n, row_max, p);
//
// The float loops (fast_exp.cc) are compiled for AVX-512, AVX2 and baseline
// x86-64 and picked when the program loads; every version computes the same
// bits (built with -ffp-contract=off; the same summation order).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace tessera::executor::cpu {

// e^x within 2 ulp for x in [-87.33, 88]; 0 below (e^-87.33 is FLT_MIN, so
// -inf gives 0); saturates at e^88 above. NaN stays NaN.
inline float Exp(float x) {
  // Cephes expf (Moshier 1992): e^x = 2^n e^r, n = round(x log2 e),
  // |r| <= ln2/2, ln 2 split in two for an exact r, degree-6 polynomial.
  constexpr float kMinX = -87.33654f;  // ln(FLT_MIN)
  constexpr float kMaxX = 88.0f;
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;
  constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23
  const float xc = std::min(std::max(x, kMinX), kMaxX);
  float n = (xc * kLog2e + kRoundMagic) - kRoundMagic;  // round to nearest
  const float r = (xc - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * r * r + r + 1.0f;
  n = (n == n) ? n : 0.0f;  // NaN would make the int conversion undefined
  const uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127)
                        << 23;
  const float result = er * std::bit_cast<float>(bits);
  return x < kMinX ? 0.0f : result;
}

inline double Exp(double x) { return std::exp(x); }

// out[j] = Exp(x[j] - shift) for j < n (out may be x).
template <typename T>
void ExpShifted(const T* x, int64_t n, T shift, T* out) {
  for (int64_t j = 0; j < n; ++j) out[j] = Exp(x[j] - shift);
}
void ExpShifted(const float* x, int64_t n, float shift, float* out);

// out[j] = Exp(x[j] - shift) for j < n (out may be x); returns sum_j out[j],
// summed in 8 lanes of T and then in double (so both loops vectorize).
template <typename T>
double ExpShiftedSum(const T* x, int64_t n, T shift, T* out) {
  for (int64_t j = 0; j < n; ++j) out[j] = Exp(x[j] - shift);
  T lanes[8] = {};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    for (int l = 0; l < 8; ++l) lanes[l] += out[j + l];
  }
  double sum = 0;
  for (; j < n; ++j) sum += out[j];
  for (int l = 0; l < 8; ++l) sum += lanes[l];
  return sum;
}
double ExpShiftedSum(const float* x, int64_t n, float shift, float* out);

}  // namespace tessera::executor::cpu
