#include "executor/cpu/swiglu.h"

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

TEST(CpuSwiGluTest, ForwardByHand) {
  // Two tokens, ffn 2: gate | up per row.
  const std::vector<double> gate_up = {0, 1, 5, 2, -2, 3, 0.5, 4};
  std::vector<double> out(4);
  SwiGluForward<double>(gate_up.data(), 2, 2, out.data());
  const double sig1 = 1 / (1 + std::exp(-1.0));
  const double sig_m2 = 1 / (1 + std::exp(2.0));
  EXPECT_DOUBLE_EQ(out[0], 0.0);  // silu(0) = 0
  EXPECT_DOUBLE_EQ(out[1], 1 * sig1 * 2);
  EXPECT_DOUBLE_EQ(out[2], -2 * sig_m2 * 0.5);
  EXPECT_NEAR(out[3], 3 / (1 + std::exp(-3.0)) * 4, 1e-13);
}

TEST(CpuSwiGluTest, BackwardMatchesFiniteDifferences) {
  const int64_t tokens = 4, ffn = 7;
  auto gate_up = RandomVector<double>(tokens * 2 * ffn, 1, -4, 4);
  const auto w = RandomVector<double>(tokens * ffn, 2);
  std::vector<double> out(tokens * ffn);
  auto loss = [&] {
    SwiGluForward<double>(gate_up.data(), tokens, ffn, out.data());
    return Dot(w, out);
  };
  const auto fd = CentralDifferences(gate_up, loss);
  std::vector<double> dgate_up(gate_up.size(), 9.0);  // written, not added
  SwiGluBackward<double>(w.data(), gate_up.data(), tokens, ffn,
                         dgate_up.data());
  ExpectAllNear(dgate_up, fd, 1e-9, 1e-7, "dgate_up");
  // In place (dgate_up aliasing gate_up) gives the same.
  std::vector<double> in_place = gate_up;
  SwiGluBackward<double>(w.data(), in_place.data(), tokens, ffn,
                         in_place.data());
  EXPECT_EQ(in_place, dgate_up);
}

}  // namespace
}  // namespace tessera::executor::cpu
