// MemoryMeter: the counters against hand-added byte counts, the limit at and
// past its edge, the exact error texts the backends report, the 64-bit edge
// of BytesFor, and the limit holding while threads reserve and release.
#include "executor/memory_meter.h"

#include <atomic>
#include <cstdlib>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tessera::executor {
namespace {

TEST(MemoryMeterTest, CountsReservationsAndTheirPeak) {
  MemoryMeter meter("cpu backend", 0);
  EXPECT_EQ(meter.limit_bytes(), 0);
  absl::StatusOr<int64_t> before = meter.Reserve({"a", 1000, DType::kF32});
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(*before, 0);
  before = meter.Reserve({"ids", 7, DType::kI32});
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(*before, 4000);
  before = meter.Reserve({"w", 10, DType::kBF16});
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(*before, 4028);
  EXPECT_EQ(meter.in_use_bytes(), 4048);
  EXPECT_EQ(meter.peak_bytes(), 4048);
  meter.Release(4000);
  EXPECT_EQ(meter.in_use_bytes(), 48);
  EXPECT_EQ(meter.peak_bytes(), 4048);  // the peak stays
  meter.ResetPeak();
  EXPECT_EQ(meter.peak_bytes(), 48);
  meter.Release(48);
  EXPECT_EQ(meter.in_use_bytes(), 0);
  EXPECT_EQ(meter.peak_bytes(), 48);
}

TEST(MemoryMeterTest, PastTheLimitIsResourceExhaustedAndChangesNothing) {
  MemoryMeter meter("cpu backend", 10000);
  ASSERT_TRUE(meter.Reserve({"a", 2000, DType::kF32}).ok());
  const absl::StatusOr<int64_t> over =
      meter.Reserve({"layers.0.mlp.gate_up", 1000, DType::kF32});
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(over.status().message(),
            "cpu backend: allocating layers.0.mlp.gate_up (1000 x f32 = 4000 "
            "bytes) would take the bytes in use from 8000 to 12000, past the "
            "memory limit of 10000 bytes");
  EXPECT_EQ(meter.in_use_bytes(), 8000);
  EXPECT_EQ(meter.peak_bytes(), 8000);
  // Exactly at the limit is allowed.
  ASSERT_TRUE(meter.Reserve({"c", 1000, DType::kBF16}).ok());
  EXPECT_EQ(meter.in_use_bytes(), 10000);
  // 0 (or a negative limit) is none; a limit below what is held fails the
  // next reservation and keeps what is held.
  meter.SetLimit(-5);
  EXPECT_EQ(meter.limit_bytes(), 0);
  EXPECT_TRUE(meter.Reserve({"b", 1000, DType::kF32}).ok());
  meter.SetLimit(9000);
  EXPECT_EQ(meter.limit_bytes(), 9000);
  EXPECT_FALSE(meter.Reserve({"d", 1, DType::kI32}).ok());
  EXPECT_EQ(meter.in_use_bytes(), 14000);
  // Released below the limit again, the same request fits.
  meter.Release(6000);
  EXPECT_TRUE(meter.Reserve({"d", 1, DType::kI32}).ok());
  EXPECT_EQ(meter.in_use_bytes(), 8004);
  EXPECT_EQ(meter.peak_bytes(), 14000);
}

TEST(MemoryMeterTest, ANegativeLimitAtConstructionIsNone) {
  MemoryMeter meter("cuda backend", -1);
  EXPECT_EQ(meter.limit_bytes(), 0);
  EXPECT_TRUE(meter.Reserve({"x", int64_t{1} << 40, DType::kF32}).ok());
  EXPECT_EQ(meter.in_use_bytes(), int64_t{4} << 40);
}

TEST(MemoryMeterTest, BytesForRejectsNegativeAndOverflowingCounts) {
  const MemoryMeter meter("cuda backend", 0);
  const absl::StatusOr<int64_t> negative =
      meter.BytesFor({"neg", -1, DType::kF32}, 256);
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(negative.status().message(),
            "cuda backend: allocating neg: numel = -1 is negative");

  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  // f32: the largest accepted numel is max / 4 - slack.
  const int64_t edge = kMax / 4 - 64;
  const absl::StatusOr<int64_t> fits =
      meter.BytesFor({"edge", edge, DType::kF32}, 64);
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ(*fits, edge * 4);
  const absl::StatusOr<int64_t> overflows =
      meter.BytesFor({"huge", edge + 1, DType::kF32}, 64);
  ASSERT_FALSE(overflows.ok());
  EXPECT_EQ(overflows.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(overflows.status().message(),
            absl::StrCat("cuda backend: allocating huge: ", edge + 1,
                         " x f32 overflows a 64-bit byte count"));
  // The slack is in elements: a larger one refuses a smaller count; bf16
  // elements are 2 bytes.
  EXPECT_FALSE(meter.BytesFor({"edge", edge, DType::kF32}, 256).ok());
  const absl::StatusOr<int64_t> bf16 =
      meter.BytesFor({"w", kMax / 2 - 256, DType::kBF16}, 256);
  ASSERT_TRUE(bf16.ok());
  EXPECT_EQ(*bf16, (kMax / 2 - 256) * 2);
  const absl::StatusOr<int64_t> zero =
      meter.BytesFor({"none", 0, DType::kI32}, 64);
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(*zero, 0);
  EXPECT_EQ(meter.in_use_bytes(), 0);  // counts nothing
}

TEST(MemoryMeterTest, AllocatorErrorsNameTheRequest) {
  const MemoryMeter meter("cuda backend", 0);
  const MemoryRequest request{"layers.3.attn.qkv", 1024, DType::kBF16};
  const absl::Status device =
      meter.OutOfMemory(request, "device", 123456,
                        "cudaMallocAsync: out of memory "
                        "(cudaErrorMemoryAllocation)");
  EXPECT_EQ(device.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(device.message(),
            "cuda backend: allocating layers.3.attn.qkv (1024 x bf16 = 2048 "
            "bytes): the device is out of memory (123456 bytes in use by this "
            "backend; cudaMallocAsync: out of memory "
            "(cudaErrorMemoryAllocation))");
  const absl::Status host =
      MemoryMeter("cpu backend", 0)
          .OutOfMemory({"x", 3, DType::kF32}, "host", 64, "");
  EXPECT_EQ(host.message(),
            "cpu backend: allocating x (3 x f32 = 12 bytes): the host is out "
            "of memory (64 bytes in use by this backend)");
  const absl::Status other = meter.AllocationError(
      absl::StatusCode::kInternal, "x", "cudaMallocAsync: unknown error");
  EXPECT_EQ(other.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(other.message(),
            "cuda backend: allocating x: cudaMallocAsync: unknown error");
}

// Eight threads reserve and release against one limit: the limit holds at
// every moment and the counters end where they began.
TEST(MemoryMeterTest, TheLimitHoldsAcrossThreads) {
  constexpr int64_t kBytes = 4 * 256;
  constexpr int64_t kLimit = 20 * kBytes;
  MemoryMeter meter("cpu backend", kLimit);
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i) {
        int held = 0;
        for (int j = 0; j < 4; ++j) {
          if (meter.Reserve({"x", 256, DType::kF32}).ok()) {
            ++held;
          } else {
            ++refused;
          }
          if (meter.in_use_bytes() > kLimit) std::abort();
        }
        meter.Release(held * kBytes);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(meter.in_use_bytes(), 0);
  EXPECT_LE(meter.peak_bytes(), kLimit);
  EXPECT_GE(meter.peak_bytes(), kBytes);
}

}  // namespace
}  // namespace tessera::executor
