// Helpers for the CUDA tests: skipping without a device, seeded random data
// rounded to bf16 (so the CPU reference and the GPU see the same values),
// moving host vectors in and out of a backend, and norm-relative errors.
//
//   TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
//   std::vector<float> x = RandomBf16Values(n, /*seed=*/1);
//   DeviceBuffer d = Upload(gpu, x, DType::kBF16);
//   EXPECT_LE(RelativeError(Download(gpu, d.view()), reference), 1e-2);
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "executor/backend.h"
#include "executor/cuda/cuda_backend.h"
#include "executor/tensor.h"
#include "gtest/gtest.h"

namespace tessera::executor::cuda_test {

// Skips the test, saying why, when this process sees no CUDA device.
#define TESSERA_SKIP_WITHOUT_CUDA_DEVICE()                                 \
  do {                                                                     \
    std::string tessera_no_device_why;                                     \
    if (!::tessera::executor::CudaDeviceAvailable(&tessera_no_device_why)) \
      GTEST_SKIP() << "no CUDA device: " << tessera_no_device_why;         \
  } while (false)

// n values uniform in [lo, hi), each rounded to the nearest bf16.
inline std::vector<float> RandomBf16Values(int64_t n, uint32_t seed,
                                           double lo = -1.0, double hi = 1.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v)
    x = Bf16ToFloat(FloatToBf16(static_cast<float>(dist(gen))));
  return v;
}

inline std::vector<int32_t> RandomInts(int64_t n, uint32_t seed, int32_t lo,
                                       int32_t hi) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> dist(lo, hi);
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int32_t& x : v) x = dist(gen);
  return v;
}

// A buffer of `backend` holding `values` as `dtype` (f32 or bf16).
inline DeviceBuffer Upload(Backend& backend, const std::vector<float>& values,
                           DType dtype) {
  absl::StatusOr<DeviceBuffer> buf = backend.Allocate(
      static_cast<int64_t>(values.size()), dtype, "test upload");
  EXPECT_TRUE(buf.ok()) << buf.status();
  if (dtype == DType::kF32) {
    backend.CopyFromHost(values.data(), buf->view());
  } else {
    std::vector<uint16_t> bits(values.size());
    for (size_t i = 0; i < values.size(); ++i) bits[i] = FloatToBf16(values[i]);
    backend.CopyFromHost(bits.data(), buf->view());
  }
  return std::move(*buf);
}

inline DeviceBuffer UploadInts(Backend& backend,
                               const std::vector<int32_t>& values) {
  absl::StatusOr<DeviceBuffer> buf = backend.Allocate(
      static_cast<int64_t>(values.size()), DType::kI32, "test upload");
  EXPECT_TRUE(buf.ok()) << buf.status();
  backend.CopyFromHost(values.data(), buf->view());
  return std::move(*buf);
}

// The values of a f32 or bf16 view, as floats.
inline std::vector<float> Download(Backend& backend, const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel));
  if (t.dtype == DType::kF32) {
    backend.CopyToHost(t, out.data());
  } else {
    std::vector<uint16_t> bits(out.size());
    backend.CopyToHost(t, bits.data());
    for (size_t i = 0; i < out.size(); ++i) out[i] = Bf16ToFloat(bits[i]);
  }
  return out;
}

// Positions from, from+1, ..., from+n-1 (attention's q_pos and k_pos).
inline std::vector<int32_t> Iota(int64_t n, int32_t from = 0) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = from + static_cast<int32_t>(i);
  return v;
}

// The largest |a - b| elementwise; an infinity must match exactly (else the
// result is infinite), as lse's -inf for rows that see no key.
inline double MaxAbsDiff(const std::vector<float>& a,
                         const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isinf(a[i]) || std::isinf(b[i])) {
      if (a[i] != b[i]) return INFINITY;
      continue;
    }
    worst = std::max(worst, std::abs(double(a[i]) - b[i]));
  }
  return worst;
}

// ||a - ref|| / ||ref|| (0 when both are 0); NaN anywhere gives +inf, so that
// NaN never passes.
inline double RelativeError(const std::vector<float>& a,
                            const std::vector<float>& ref) {
  if (a.size() != ref.size()) return INFINITY;
  double diff = 0, norm = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(ref[i])) {
      if (a[i] == ref[i]) continue;  // the same infinity
      return INFINITY;
    }
    const double d = static_cast<double>(a[i]) - ref[i];
    diff += d * d;
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  if (norm == 0) return diff == 0 ? 0 : INFINITY;
  return std::sqrt(diff / norm);
}

}  // namespace tessera::executor::cuda_test
