#include "executor/cpu/rmsnorm.h"

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

TEST(CpuRmsNormTest, ForwardByHand) {
  // x = [3, 4]: mean square 12.5, rstd = 1/sqrt(12.5 + 0.5) = 1/sqrt(13).
  const std::vector<double> x = {3, 4}, w = {1, 2};
  std::vector<double> y(2), rstd(1);
  RmsNormForward<double>(x.data(), w.data(), 1, 2, 0.5, y.data(), rstd.data());
  EXPECT_DOUBLE_EQ(rstd[0], 1 / std::sqrt(13.0));
  EXPECT_DOUBLE_EQ(y[0], 3 / std::sqrt(13.0));
  EXPECT_DOUBLE_EQ(y[1], 8 / std::sqrt(13.0));
}

TEST(CpuRmsNormTest, BackwardMatchesFiniteDifferencesAndAdds) {
  const int64_t rows = 5, cols = 12;
  auto x = RandomVector<double>(rows * cols, 1);
  auto weight = RandomVector<double>(cols, 2, 0.5, 1.5);
  const auto w = RandomVector<double>(rows * cols, 3);
  const double eps = 1e-5;
  std::vector<double> y(rows * cols), rstd(rows);
  auto loss = [&] {
    RmsNormForward<double>(x.data(), weight.data(), rows, cols, eps, y.data(),
                           rstd.data());
    return Dot(w, y);
  };
  const auto fd_x = CentralDifferences(x, loss);
  const auto fd_weight = CentralDifferences(weight, loss);
  loss();  // leave rstd of the unperturbed x
  std::vector<double> dx(rows * cols, 0.25), dweight(cols, -1.0);
  RmsNormBackward<double>(w.data(), x.data(), weight.data(), rstd.data(), rows,
                          cols, dx.data(), dweight.data());
  for (double& g : dx) g -= 0.25;
  for (double& g : dweight) g += 1.0;
  ExpectAllNear(dx, fd_x, 1e-9, 1e-7, "dx");
  ExpectAllNear(dweight, fd_weight, 1e-9, 1e-7, "dweight");
}

}  // namespace
}  // namespace tessera::executor::cpu
