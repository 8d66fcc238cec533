// HostMemoryOps against hand computations: the reduction order, bf16's single
// rounding, i32 wrap-around, NaN in max, aliasing and copies.
#include "executor/comm/memory_ops.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace tessera::executor {
namespace {

HostMemoryOps& ops = HostMemoryOps::Get();

TEST(HostMemoryOpsTest, SumsInTheOrderGiven) {
  // (1e8 + -1e8) + 1 = 1, but (-1e8 + 1) + 1e8 = 0 in float: -1e8 + 1
  // rounds back to -1e8 (float spacing there is 8).
  const float big = 1e8f, minus_big = -1e8f, one = 1.0f;
  float out = -7;
  const void* in_order[] = {&big, &minus_big, &one};
  ASSERT_TRUE(ops.Reduce(in_order, &out, 1, DType::kF32, ReduceOp::kSum).ok());
  EXPECT_EQ(out, 1.0f);
  const void* other_order[] = {&minus_big, &one, &big};
  ASSERT_TRUE(
      ops.Reduce(other_order, &out, 1, DType::kF32, ReduceOp::kSum).ok());
  EXPECT_EQ(out, 0.0f);
}

TEST(HostMemoryOpsTest, Bf16SumsInFloatAndRoundsOnce) {
  // 1 + 2^-8 + 2^-8 = 1 + 2^-7, exact in bf16 (7 mantissa bits). Rounding
  // after each step would give 1: 1 + 2^-8 is a tie that rounds to even.
  const uint16_t one = FloatToBf16(1.0f);
  const uint16_t tiny = FloatToBf16(std::ldexp(1.0f, -8));
  ASSERT_EQ(Bf16ToFloat(tiny), std::ldexp(1.0f, -8));
  ASSERT_EQ(Bf16ToFloat(FloatToBf16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  uint16_t out = 0;
  const void* srcs[] = {&one, &tiny, &tiny};
  ASSERT_TRUE(ops.Reduce(srcs, &out, 1, DType::kBF16, ReduceOp::kSum).ok());
  EXPECT_EQ(Bf16ToFloat(out), 1.0f + std::ldexp(1.0f, -7));
}

TEST(HostMemoryOpsTest, I32SumWrapsAround) {
  const int32_t max = std::numeric_limits<int32_t>::max(), one = 1, minus = -5;
  int32_t out = 0;
  const void* srcs[] = {&max, &one, &minus};
  ASSERT_TRUE(ops.Reduce(srcs, &out, 1, DType::kI32, ReduceOp::kSum).ok());
  // INT32_MAX + 1 wraps to INT32_MIN; INT32_MIN - 5 wraps to INT32_MAX - 4.
  EXPECT_EQ(out, std::numeric_limits<int32_t>::max() - 4);
}

TEST(HostMemoryOpsTest, MaxOfEveryDtype) {
  const float a[] = {1, -2, 3.5f}, b[] = {-1, -3, 7};
  float fout[3];
  const void* fsrcs[] = {a, b};
  ASSERT_TRUE(ops.Reduce(fsrcs, fout, 3, DType::kF32, ReduceOp::kMax).ok());
  EXPECT_EQ(fout[0], 1);
  EXPECT_EQ(fout[1], -2);
  EXPECT_EQ(fout[2], 7);

  const int32_t ia[] = {-4, 9}, ib[] = {-3, 2}, ic[] = {-10, 10};
  int32_t iout[2];
  const void* isrcs[] = {ia, ib, ic};
  ASSERT_TRUE(ops.Reduce(isrcs, iout, 2, DType::kI32, ReduceOp::kMax).ok());
  EXPECT_EQ(iout[0], -3);
  EXPECT_EQ(iout[1], 10);

  const uint16_t ba[] = {FloatToBf16(-0.5f)}, bb[] = {FloatToBf16(-0.25f)};
  uint16_t bout[1];
  const void* bsrcs[] = {ba, bb};
  ASSERT_TRUE(ops.Reduce(bsrcs, bout, 1, DType::kBF16, ReduceOp::kMax).ok());
  EXPECT_EQ(Bf16ToFloat(bout[0]), -0.25f);
}

TEST(HostMemoryOpsTest, MaxPropagatesNanFromAnySource) {
  const float nan = std::nanf("");
  const float a[] = {nan, 1, 1}, b[] = {2, nan, 3}, c[] = {0, 0, nan};
  float out[3];
  const void* srcs[] = {a, b, c};
  ASSERT_TRUE(ops.Reduce(srcs, out, 3, DType::kF32, ReduceOp::kMax).ok());
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_TRUE(std::isnan(out[2]));
}

TEST(HostMemoryOpsTest, DestinationMayBeASourceAcrossBlocks) {
  const int64_t n = 3000;  // several 1024-element blocks
  std::vector<float> a(n), b(n);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = static_cast<float>(2 * i + 1);
  }
  const void* srcs[] = {a.data(), b.data()};
  ASSERT_TRUE(ops.Reduce(srcs, b.data(), n, DType::kF32, ReduceOp::kSum).ok());
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(b[i], 3 * i + 1) << i;
}

TEST(HostMemoryOpsTest, RejectsNoSources) {
  float out = 0;
  EXPECT_EQ(ops.Reduce({}, &out, 1, DType::kF32, ReduceOp::kSum).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HostMemoryOpsTest, CopiesAndStages) {
  absl::StatusOr<void*> staging = ops.Allocate(12);
  ASSERT_TRUE(staging.ok());
  const int32_t src[] = {1, 2, 3};
  ASSERT_TRUE(ops.Copy(*staging, src, sizeof(src)).ok());
  int32_t dst[3] = {};
  ASSERT_TRUE(ops.Copy(dst, *staging, sizeof(dst)).ok());
  EXPECT_EQ(dst[2], 3);
  EXPECT_TRUE(ops.Copy(dst, dst, sizeof(dst)).ok());  // onto itself: no-op
  EXPECT_EQ(dst[0], 1);
  ops.Free(*staging);
  absl::StatusOr<void*> empty = ops.Allocate(0);
  ASSERT_TRUE(empty.ok());
  ops.Free(*empty);
}

}  // namespace
}  // namespace tessera::executor
