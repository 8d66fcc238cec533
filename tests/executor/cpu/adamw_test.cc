#include "executor/cpu/adamw.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "tests/executor/cpu/cpu_test_util.h"

namespace tessera::executor::cpu {
namespace {

// lr = 1/8, b1 = 1/2, b2 = 3/4, wd = 1/4 (exact in float), w0 = 1.
// Step 1, g = 0.5: m = 0.25, v = 0.0625; m^ = 0.25/0.5 = 0.5,
//   v^ = 0.0625/0.25 = 0.25, update = 0.5/(0.5 + 1e-8) = 1 - 2e-8;
//   w = 1 - 0.125 (1 - 2e-8 + 0.25) = 0.8437500025.
// Step 2, g = -1: m = 0.125 - 0.5 = -0.375, v = 0.046875 + 0.25 = 0.296875;
//   m^ = -0.375/0.75 = -0.5, v^ = 0.296875/0.4375 = 19/28,
//   update = -0.5/sqrt(19/28) = -0.60697698;
//   w = 0.84375 - 0.125 (-0.60697698 + 0.2109375) = 0.89325494.
TEST(CpuAdamWTest, OneAndTwoStepsByHand) {
  AdamWConfig config{.lr = 0.125f,
                     .beta1 = 0.5f,
                     .beta2 = 0.75f,
                     .eps = 1e-8f,
                     .weight_decay = 0.25f,
                     .step = 1};
  double w = 1, m = 0, v = 0;
  const double g1 = 0.5, g2 = -1;
  AdamWStep<double>(config, true, &w, &g1, &m, &v, 1);
  EXPECT_DOUBLE_EQ(m, 0.25);
  EXPECT_DOUBLE_EQ(v, 0.0625);
  EXPECT_NEAR(w, 0.8437500025, 1e-12);
  config.step = 2;
  AdamWStep<double>(config, true, &w, &g2, &m, &v, 1);
  EXPECT_DOUBLE_EQ(m, -0.375);
  EXPECT_DOUBLE_EQ(v, 0.296875);
  EXPECT_NEAR(w, 0.89325494, 1e-8);
}

TEST(CpuAdamWTest, NoDecayLeavesOutTheWeightDecayTerm) {
  // As above without decay: w = 1 - 0.125 (1 - 2e-8) = 0.8750000025.
  AdamWConfig config{.lr = 0.125f,
                     .beta1 = 0.5f,
                     .beta2 = 0.75f,
                     .eps = 1e-8f,
                     .weight_decay = 0.25f,
                     .step = 1};
  float w = 1, m = 0, v = 0;
  const float g = 0.5f;
  AdamWStep<float>(config, false, &w, &g, &m, &v, 1);
  EXPECT_NEAR(w, 0.875f, 1e-7f);
}

// Default hyperparameters over many elements and steps against the update
// written out per element in double.
TEST(CpuAdamWTest, FloatMatchesTheFormulaOverSteps) {
  const int64_t n = 257;
  AdamWConfig config;  // lr 3e-4, betas 0.9/0.95, eps 1e-8, wd 0.1
  std::vector<float> w = cpu_test::RandomVector<float>(n, 1);
  std::vector<float> m(n, 0.f), v(n, 0.f);
  std::vector<double> wd(w.begin(), w.end()), md(n, 0), vd(n, 0);
  for (int64_t step = 1; step <= 5; ++step) {
    const auto g = cpu_test::RandomVector<float>(n, 10 + step);
    config.step = step;
    AdamWStep<float>(config, true, w.data(), g.data(), m.data(), v.data(), n);
    const double b1 = config.beta1, b2 = config.beta2;
    for (int64_t i = 0; i < n; ++i) {
      md[i] = b1 * md[i] + (1 - b1) * g[i];
      vd[i] = b2 * vd[i] + (1 - b2) * double(g[i]) * g[i];
      const double mhat = md[i] / (1 - std::pow(b1, step));
      const double vhat = vd[i] / (1 - std::pow(b2, step));
      wd[i] -= double(config.lr) * (mhat / (std::sqrt(vhat) + config.eps) +
                                    double(config.weight_decay) * wd[i]);
    }
  }
  cpu_test::ExpectAllNear(w, wd, 1e-6, 1e-6, "w");
  cpu_test::ExpectAllNear(m, md, 1e-6, 1e-5, "m");
  cpu_test::ExpectAllNear(v, vd, 1e-7, 1e-5, "v");
}

}  // namespace
}  // namespace tessera::executor::cpu
