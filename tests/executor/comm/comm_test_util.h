// Helpers shared by the communicator tests: host buffers of any dtype read
// and written as double, per-rank inputs whose sums and maxima are exact in
// every dtype (so expected results are computed by hand, order-free), the
// dtypes, ops and counts the tests sweep, and what failure tests check
// (texts in statuses, elapsed seconds).
//
//   HostBuffer buf(DType::kBF16, 7);
//   buf.Fill([&](int64_t i) { return Input(rank, i, DType::kBF16); });
//   TESSERA_RETURN_IF_ERROR(buf.Expect(want, "AllReduce"));
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "executor/comm/communicator.h"
#include "executor/tensor.h"

namespace tessera::executor::testing {

class HostBuffer {
 public:
  HostBuffer(DType dtype, int64_t numel)
      : dtype_(dtype),
        storage_(static_cast<size_t>(numel) + 1),
        numel_(numel) {}

  Tensor view() const {
    return Tensor{const_cast<uint32_t*>(storage_.data()), dtype_, numel_};
  }
  int64_t numel() const { return numel_; }

  double Get(int64_t i) const {
    switch (dtype_) {
      case DType::kF32: {
        float f;
        std::memcpy(&f, Bytes() + 4 * i, 4);
        return f;
      }
      case DType::kBF16: {
        uint16_t b;
        std::memcpy(&b, Bytes() + 2 * i, 2);
        return Bf16ToFloat(b);
      }
      case DType::kI32: {
        int32_t v;
        std::memcpy(&v, Bytes() + 4 * i, 4);
        return v;
      }
    }
    return NAN;
  }
  void Set(int64_t i, double value) {
    char* p = const_cast<char*>(Bytes());
    switch (dtype_) {
      case DType::kF32: {
        const float f = static_cast<float>(value);
        std::memcpy(p + 4 * i, &f, 4);
        return;
      }
      case DType::kBF16: {
        const uint16_t b = FloatToBf16(static_cast<float>(value));
        std::memcpy(p + 2 * i, &b, 2);
        return;
      }
      case DType::kI32: {
        const int32_t v = static_cast<int32_t>(value);
        std::memcpy(p + 4 * i, &v, 4);
        return;
      }
    }
  }
  void Fill(const std::function<double(int64_t)>& value) {
    for (int64_t i = 0; i < numel_; ++i) Set(i, value(i));
  }
  // OK when element i equals want[i] exactly, else names the first mismatch.
  absl::Status Expect(const std::vector<double>& want,
                      const std::string& what) const {
    for (int64_t i = 0; i < numel_; ++i) {
      if (Get(i) != want[i]) {
        return absl::InternalError(absl::StrCat(what, ": element ", i, " is ",
                                                Get(i), ", want ", want[i]));
      }
    }
    return absl::OkStatus();
  }

 private:
  const char* Bytes() const {
    return reinterpret_cast<const char*>(storage_.data());
  }
  DType dtype_;
  std::vector<uint32_t> storage_;  // 4-byte aligned, one spare word
  int64_t numel_;
};

// Rank `rank`'s input element i: small multiples of 1/4 in [-4, 4.25], so
// that sums over 8 ranks and maxima are exact in f32, bf16 and (for i32,
// truncated to integers) i32.
inline double Input(int rank, int64_t i, DType dtype) {
  const double v = static_cast<double>((rank * 5 + i * 3 + 1) % 9 - 4);
  return dtype == DType::kI32 ? v : v + 0.25 * ((rank + i) % 2);
}

// The expected reduction over ranks 0..n-1 of Input(r, i).
inline double Reduced(int n, int64_t i, DType dtype, ReduceOp op) {
  double acc = Input(0, i, dtype);
  for (int r = 1; r < n; ++r) {
    const double v = Input(r, i, dtype);
    acc = op == ReduceOp::kSum ? acc + v : std::max(acc, v);
  }
  return acc;
}

inline std::string Describe(int n, int64_t count, DType dtype, ReduceOp op,
                            bool in_place) {
  return absl::StrCat("n=", n, " count=", count, " ", DTypeName(dtype), " ",
                      op == ReduceOp::kSum ? "sum" : "max",
                      in_place ? " in place" : "");
}

// `numel` elements of rank `rank`'s input: Input(rank, i, dtype).
inline HostBuffer InputBuffer(int rank, DType dtype, int64_t numel) {
  HostBuffer buf(dtype, numel);
  buf.Fill([&](int64_t i) { return Input(rank, i, dtype); });
  return buf;
}

// `numel` elements that no correct result holds (99), to be overwritten.
inline HostBuffer GarbageBuffer(DType dtype, int64_t numel) {
  HostBuffer buf(dtype, numel);
  buf.Fill([](int64_t) { return 99; });
  return buf;
}

using Clock = std::chrono::steady_clock;

// Seconds from `start` until now.
inline double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Whether the message of `s` contains `text`.
inline bool Contains(const absl::Status& s, absl::string_view text) {
  return s.message().find(text) != absl::string_view::npos;
}

constexpr DType kAllDTypes[] = {DType::kF32, DType::kBF16, DType::kI32};
constexpr ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kMax};
// Zero, one, odd counts below and above the group size, and one that spans
// more than one block of the host reduction (1024 elements).
constexpr int64_t kCounts[] = {0, 1, 7, 13, 2051};

// Runs check(count, dtype, op, in_place) for every count of kCounts, dtype,
// op, and in place or not (a reduction's sweep); the first error stops it.
inline absl::Status ForEveryReduction(
    const std::function<absl::Status(int64_t count, DType dtype, ReduceOp op,
                                     bool in_place)>& check) {
  for (int64_t count : kCounts) {
    for (DType dtype : kAllDTypes) {
      for (ReduceOp op : kAllOps) {
        for (bool in_place : {false, true}) {
          if (absl::Status s = check(count, dtype, op, in_place); !s.ok()) {
            return s;
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace tessera::executor::testing
