#include "executor/cpu/gemm.h"

#include <atomic>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/executor/cpu/cpu_test_util.h"

namespace tessera::executor::cpu {
namespace {

using cpu_test::ExpectAllNear;
using cpu_test::RandomVector;

// The definition, one dot product per element, in long double.
template <typename T>
std::vector<T> NaiveGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                         T alpha, const std::vector<T>& a, int64_t lda,
                         const std::vector<T>& b, int64_t ldb, T beta,
                         std::vector<T> c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      long double dot = 0;
      for (int64_t p = 0; p < k; ++p) {
        const T av = ta ? a[p * lda + i] : a[i * lda + p];
        const T bv = tb ? b[j * ldb + p] : b[p * ldb + j];
        dot += static_cast<long double>(av) * bv;
      }
      T& cij = c[i * ldc + j];
      cij = static_cast<T>(alpha * dot + (beta == T(0) ? 0 : beta * cij));
    }
  }
  return c;
}

template <typename T>
void CheckAllCombinations(void (*gemm)(bool, bool, int64_t, int64_t, int64_t, T,
                                       const T*, int64_t, const T*, int64_t, T,
                                       T*, int64_t),
                          int64_t m, int64_t n, int64_t k, double tol,
                          const char* name) {
  const std::pair<T, T> scalars[] = {
      {T(1), T(0)}, {T(-0.5), T(1)}, {T(2), T(0.25)}};
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (const auto& [alpha, beta] : scalars) {
        // Padded leading dimensions, as attention's strided head views use.
        const int64_t lda = (ta ? m : k) + 3;
        const int64_t ldb = (tb ? k : n) + 5;
        const int64_t ldc = n + 2;
        const auto a = RandomVector<T>((ta ? k : m) * lda, 1);
        const auto b = RandomVector<T>((tb ? n : k) * ldb, 2);
        auto c = RandomVector<T>(m * ldc, 3);
        const auto want =
            NaiveGemm<T>(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        gemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta,
             c.data(), ldc);
        ExpectAllNear(c, want, tol, tol,
                      testing::Message()
                          << name << " ta=" << ta << " tb=" << tb
                          << " alpha=" << alpha << " beta=" << beta);
      }
    }
  }
}

TEST(CpuGemmTest, EveryTransposeAndScalarMatchesTheDefinitionInDouble) {
  // Sizes cross the blocked GEMM's tiles (64 rows, 256 depth) unevenly.
  CheckAllCombinations<double>(&Gemm<double>, 70, 37, 300, 1e-12, "Gemm");
  CheckAllCombinations<double>(&GemmBlocked<double>, 70, 37, 300, 1e-12,
                               "GemmBlocked");
  CheckAllCombinations<double>(&Gemm<double>, 1, 1, 1, 1e-14, "Gemm 1x1x1");
  CheckAllCombinations<double>(&GemmBlocked<double>, 5, 3, 2, 1e-14,
                               "GemmBlocked 5x3x2");
}

TEST(CpuGemmTest, EveryTransposeAndScalarMatchesTheDefinitionInFloat) {
  CheckAllCombinations<float>(&Gemm<float>, 67, 45, 129, 2e-5, "Gemm");
  CheckAllCombinations<float>(&GemmBlocked<float>, 67, 45, 129, 2e-5,
                              "GemmBlocked");
}

TEST(CpuGemmTest, FallbackAgreesWithBlasOnALinearLayerShape) {
  if (!BlasAvailable()) {
    GTEST_SKIP() << "built without CBLAS: Gemm is the fallback itself";
  }
  // A tiny-model MLP down projection and its two backward GEMMs.
  const int64_t tokens = 130, hidden = 128, ffn = 352;
  const auto x = RandomVector<float>(tokens * ffn, 4);
  const auto w = RandomVector<float>(hidden * ffn, 5);
  const auto dy = RandomVector<float>(tokens * hidden, 6);
  std::vector<float> y_blas(tokens * hidden), y_blocked(tokens * hidden);
  Gemm<float>(false, true, tokens, hidden, ffn, 1, x.data(), ffn, w.data(), ffn,
              0, y_blas.data(), hidden);
  GemmBlocked<float>(false, true, tokens, hidden, ffn, 1, x.data(), ffn,
                     w.data(), ffn, 0, y_blocked.data(), hidden);
  ExpectAllNear(y_blocked, y_blas, 1e-4, 1e-5, "forward");
  std::vector<float> dw_blas(hidden * ffn, 1.f), dw_blocked(hidden * ffn, 1.f);
  Gemm<float>(true, false, hidden, ffn, tokens, 1, dy.data(), hidden, x.data(),
              ffn, 1, dw_blas.data(), ffn);
  GemmBlocked<float>(true, false, hidden, ffn, tokens, 1, dy.data(), hidden,
                     x.data(), ffn, 1, dw_blocked.data(), ffn);
  ExpectAllNear(dw_blocked, dw_blas, 1e-4, 1e-5, "dweight");
}

TEST(CpuGemmTest, BetaZeroOverwritesNaN) {
  const auto a = RandomVector<float>(4 * 3, 7);
  const auto b = RandomVector<float>(3 * 5, 8);
  for (auto gemm : {&Gemm<float>, &GemmBlocked<float>}) {
    std::vector<float> c(4 * 5, std::numeric_limits<float>::quiet_NaN());
    gemm(false, false, 4, 5, 3, 1.f, a.data(), 3, b.data(), 5, 0.f, c.data(),
         5);
    for (float v : c) ASSERT_FALSE(std::isnan(v));
  }
}

TEST(CpuGemmTest, ZeroDepthScalesC) {
  for (auto gemm : {&Gemm<double>, &GemmBlocked<double>}) {
    std::vector<double> c = {1, 2, 3, 4};
    gemm(false, false, 2, 2, 0, 1.0, nullptr, 0, nullptr, 2, 0.5, c.data(), 2);
    EXPECT_EQ(c, (std::vector<double>{0.5, 1, 1.5, 2}));
  }
}

// Eight rank threads issue GEMMs at once while another thread changes the
// BLAS thread count; every result must equal the serial one exactly.
TEST(CpuGemmTest, ConcurrentCallsFromRankThreadsAreSafe) {
  constexpr int kThreads = 8;
  constexpr int kCalls = 12;
  const int64_t m = 96, n = 80, k = 112;
  std::vector<std::vector<float>> a(kThreads), b(kThreads), want(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    a[t] = RandomVector<float>(m * k, 100 + t);
    b[t] = RandomVector<float>(n * k, 200 + t);
    want[t].assign(m * n, 0.f);
    GemmBlocked<float>(false, true, m, n, k, 1.f, a[t].data(), k, b[t].data(),
                       k, 0.f, want[t].data(), n);
  }
  const int threads_before = BlasThreads();
  std::atomic<bool> done{false};
  std::thread toggler([&] {
    int i = 0;
    while (!done.load()) SetBlasThreads(1 + (i++ % 2));
  });
  std::vector<std::vector<float>> got(kThreads);
  std::vector<std::thread> ranks;
  for (int t = 0; t < kThreads; ++t) {
    ranks.emplace_back([&, t] {
      got[t].assign(m * n, 0.f);
      for (int call = 0; call < kCalls; ++call) {
        Gemm<float>(false, true, m, n, k, 1.f, a[t].data(), k, b[t].data(), k,
                    0.f, got[t].data(), n);
      }
    });
  }
  for (std::thread& r : ranks) r.join();
  done = true;
  toggler.join();
  SetBlasThreads(std::max(1, threads_before));
  for (int t = 0; t < kThreads; ++t) {
    ExpectAllNear(got[t], want[t], 1e-4, 1e-5,
                  testing::Message() << "rank " << t);
  }
}

TEST(CpuGemmTest, BlasThreadsReportsTheSetting) {
  const int before = BlasThreads();
  SetBlasThreads(3);
  EXPECT_EQ(BlasThreads(), 3);
  SetBlasThreads(0);  // clamped to 1
  EXPECT_EQ(BlasThreads(), 1);
  SetBlasThreads(std::max(1, before));
  EXPECT_FALSE(BlasDescription().empty());
}

}  // namespace
}  // namespace tessera::executor::cpu
