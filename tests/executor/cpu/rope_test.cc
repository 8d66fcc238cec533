#include "executor/cpu/rope.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "tests/executor/cpu/cpu_test_util.h"

namespace tessera::executor::cpu {
namespace {

using cpu_test::CentralDifferences;
using cpu_test::Dot;
using cpu_test::ExpectAllNear;
using cpu_test::RandomVector;

// One q head, one kv head, head_dim 4 at position 1: angles 1 and
// 10000^(-1/2) = 0.01 rad, pairing element i with i + 2 (rotate-half).
TEST(CpuRopeTest, ForwardByHandRotateHalf) {
  const std::vector<double> qkv = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const std::vector<int32_t> pos = {1};
  std::vector<double> q(4), k(4), v(4);
  RopeQkvForward<double>(qkv.data(), pos.data(), 1, 1, 1, 4, 10000.0, q.data(),
                         k.data(), v.data());
  const double c0 = std::cos(1.0), s0 = std::sin(1.0);
  const double c1 = std::cos(0.01), s1 = std::sin(0.01);
  EXPECT_NEAR(q[0], 1 * c0 - 3 * s0, 1e-15);
  EXPECT_NEAR(q[1], 2 * c1 - 4 * s1, 1e-15);
  EXPECT_NEAR(q[2], 3 * c0 + 1 * s0, 1e-15);
  EXPECT_NEAR(q[3], 4 * c1 + 2 * s1, 1e-15);
  EXPECT_NEAR(k[0], 5 * c0 - 7 * s0, 1e-15);
  EXPECT_NEAR(k[3], 8 * c1 + 6 * s1, 1e-15);
  EXPECT_EQ(v, (std::vector<double>{9, 10, 11, 12}));
}

// RoPE's defining property (Su et al. 2021, eq. 16): <R_m q, R_n k> depends
// on m - n only.
TEST(CpuRopeTest, ScoresDependOnRelativePositionOnly) {
  const int64_t d = 16;
  auto qkv = RandomVector<double>(3 * d, 1);
  auto score = [&](int32_t m, int32_t n) {
    std::vector<double> q(d), k(d), v(d), q2(d), k2(d);
    const int32_t pm[] = {m}, pn[] = {n};
    RopeQkvForward<double>(qkv.data(), pm, 1, 1, 1, d, 500000.0, q.data(),
                           k.data(), v.data());
    RopeQkvForward<double>(qkv.data(), pn, 1, 1, 1, d, 500000.0, q2.data(),
                           k2.data(), v.data());
    return Dot(q, k2);
  };
  EXPECT_NEAR(score(7, 3), score(1004, 1000), 1e-12);
  EXPECT_NEAR(score(3, 7), score(0, 4), 1e-12);
  EXPECT_GT(std::abs(score(7, 3) - score(3, 7)), 1e-6);
}

TEST(CpuRopeTest, BackwardMatchesFiniteDifferences) {
  const int64_t tokens = 5, heads = 4, kv_heads = 2, d = 6;
  const int64_t row = (heads + 2 * kv_heads) * d;
  auto qkv = RandomVector<double>(tokens * row, 2);
  const std::vector<int32_t> pos = {0, 3, 17, 64, 65};  // cp-style gaps
  const auto wq = RandomVector<double>(tokens * heads * d, 3);
  const auto wk = RandomVector<double>(tokens * kv_heads * d, 4);
  const auto wv = RandomVector<double>(tokens * kv_heads * d, 5);
  std::vector<double> q(wq.size()), k(wk.size()), v(wv.size());
  auto loss = [&] {
    RopeQkvForward<double>(qkv.data(), pos.data(), tokens, heads, kv_heads, d,
                           10000.0, q.data(), k.data(), v.data());
    return Dot(wq, q) + Dot(wk, k) + Dot(wv, v);
  };
  const auto fd = CentralDifferences(qkv, loss);
  std::vector<double> dqkv(qkv.size(), 123.0);  // written, not added
  RopeQkvBackward<double>(wq.data(), wk.data(), wv.data(), pos.data(), tokens,
                          heads, kv_heads, d, 10000.0, dqkv.data());
  ExpectAllNear(dqkv, fd, 1e-9, 1e-7, "dqkv");
}

// A rotation's transpose is its inverse: the backward undoes the forward.
TEST(CpuRopeTest, BackwardInvertsForward) {
  const int64_t tokens = 3, heads = 2, kv_heads = 1, d = 8;
  const auto qkv = RandomVector<double>(tokens * (heads + 2 * kv_heads) * d, 6);
  const std::vector<int32_t> pos = {5, 900, 70000};
  std::vector<double> q(tokens * heads * d), k(tokens * kv_heads * d),
      v(tokens * kv_heads * d), back(qkv.size());
  RopeQkvForward<double>(qkv.data(), pos.data(), tokens, heads, kv_heads, d,
                         10000.0, q.data(), k.data(), v.data());
  RopeQkvBackward<double>(q.data(), k.data(), v.data(), pos.data(), tokens,
                          heads, kv_heads, d, 10000.0, back.data());
  ExpectAllNear(back, qkv, 1e-13, 1e-13, "R^T R x");
}

}  // namespace
}  // namespace tessera::executor::cpu
