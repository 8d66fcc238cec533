#include "executor/cpu/fast_exp.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace tessera::executor::cpu {
namespace {

// Against libm's exp in double, over the whole range softmax and SiLU use.
TEST(CpuFastExpTest, FloatIsWithinThreeUlpOfLibm) {
  double worst_rel = 0;
  float worst_x = 0;
  for (float x = -87.3f; x <= 88.0f; x += 0.000731f) {
    const double want = std::exp(double(x));
    const double rel = std::abs(double(Exp(x)) - want) / want;
    if (rel > worst_rel) {
      worst_rel = rel;
      worst_x = x;
    }
  }
  // float epsilon is 1.19e-7 (one ulp is at most that, relatively).
  EXPECT_LT(worst_rel, 3 * 1.19e-7) << "at x = " << worst_x;
}

TEST(CpuFastExpTest, EdgeValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Exp(0.0f), 1.0f);
  EXPECT_EQ(Exp(-inf), 0.0f);
  EXPECT_EQ(Exp(-100.0f), 0.0f);
  EXPECT_TRUE(std::isnan(Exp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isfinite(Exp(inf)));  // saturates at e^88
  EXPECT_NEAR(Exp(1.0f), 2.718281828f, 3e-7f);
  EXPECT_EQ(Exp(-inf - 1.0f), 0.0f);
}

TEST(CpuFastExpTest, ExpShiftedSumWritesAndSums) {
  const double x[11] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, -INFINITY};
  double out[11];
  const double sum = ExpShiftedSum(x, 11, 9.0, out);
  double want = 0;
  for (int i = 0; i < 10; ++i) {
    EXPECT_DOUBLE_EQ(out[i], std::exp(i - 9.0));
    want += std::exp(i - 9.0);
  }
  EXPECT_EQ(out[10], 0.0);
  EXPECT_NEAR(sum, want, 1e-15);
}

// The float loops picked at load time (AVX-512/AVX2/baseline builds) give
// the same bits as the template compiled here for baseline x86-64.
TEST(CpuFastExpTest, DispatchedFloatLoopsMatchThePortableOnesBitForBit) {
  std::vector<float> x(1003);
  for (size_t i = 0; i < x.size(); ++i) x[i] = -90.0f + 0.091f * float(i);
  x[7] = -INFINITY;
  std::vector<float> fast(x.size()), portable(x.size());
  const double fast_sum = ExpShiftedSum(x.data(), 1003, 0.5f, fast.data());
  const double portable_sum =
      ExpShiftedSum<float>(x.data(), 1003, 0.5f, portable.data());
  EXPECT_EQ(fast, portable);
  EXPECT_EQ(fast_sum, portable_sum);
  ExpShifted(x.data(), 1003, -1.5f, fast.data());
  ExpShifted<float>(x.data(), 1003, -1.5f, portable.data());
  EXPECT_EQ(fast, portable);
}

}  // namespace
}  // namespace tessera::executor::cpu
