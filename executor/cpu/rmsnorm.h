// RMSNorm (Zhang & Sennrich 2019) on the CPU, forward and backward over rows
// of a [rows, cols] matrix. Row sums accumulate in double. T is float or
// double.
//
// defines: RmsNormForward, RmsNormBackward
//
//   cpu::RmsNormForward<float>(x, weight, rows, cols, 1e-5f, y, rstd);
//   cpu::RmsNormBackward<float>(dy, x, weight, rstd, rows, cols, dx, dweight);
#pragma once

#include <cmath>
#include <cstdint>

namespace tessera::executor::cpu {

// y = x * rstd * weight, rstd[r] = 1 / sqrt(mean_c(x[r,c]^2) + eps).
// x, y [rows, cols]; weight [cols]; rstd [rows] (saved for the backward).
template <typename T>
void RmsNormForward(const T* x, const T* weight, int64_t rows, int64_t cols,
                    T eps, T* y, T* rstd) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    double sum_sq = 0;
    for (int64_t c = 0; c < cols; ++c) sum_sq += double(xr[c]) * xr[c];
    const T s = T(1.0 / std::sqrt(sum_sq / double(cols) + double(eps)));
    rstd[r] = s;
    T* yr = y + r * cols;
    for (int64_t c = 0; c < cols; ++c) yr[c] = xr[c] * s * weight[c];
  }
}

// With g = dy * weight and s = rstd[r] (Zhang & Sennrich 2019, eq. for the
// RMS gradient): dx = s g - x s^3 mean_c(g x); dweight = sum_r dy x s.
// Adds into dx [rows, cols] and dweight [cols].
template <typename T>
void RmsNormBackward(const T* dy, const T* x, const T* weight, const T* rstd,
                     int64_t rows, int64_t cols, T* dx, T* dweight) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    const T* dyr = dy + r * cols;
    const T s = rstd[r];
    double dot = 0;  // sum_c g x
    for (int64_t c = 0; c < cols; ++c)
      dot += double(dyr[c]) * weight[c] * xr[c];
    const T coef = T(dot / double(cols) * double(s) * double(s) * double(s));
    T* dxr = dx + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      dxr[c] += s * dyr[c] * weight[c] - coef * xr[c];
      dweight[c] += dyr[c] * xr[c] * s;
    }
  }
}

}  // namespace tessera::executor::cpu
