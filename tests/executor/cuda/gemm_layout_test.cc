// The row-major -> column-major mapping that the cuBLASLt GEMMs use, checked
// on the CPU: a column-major reference GEMM driven by exactly the mapped
// arguments (operands, transposes, rows/cols/ld of each stored matrix) must
// reproduce a naive row-major GEMM for every transpose combination.
#include "executor/cuda/gemm_layout.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace tessera::executor::cuda {
namespace {

// Element (r, c) of op(stored), stored column-major with leading dimension ld.
float OpAt(const ColumnMajorOperand& op, const float* data, int64_t r,
           int64_t c) {
  return op.trans ? data[c + r * op.ld] : data[r + c * op.ld];
}

// D = alpha op(first) op(second) + beta C, column-major, as cuBLASLt computes
// it from these arguments (C and D share ldc).
void ColumnMajorReference(const ColumnMajorGemm& g, float alpha,
                          const float* first, const float* second, float beta,
                          float* c) {
  for (int64_t i = 0; i < g.m; ++i) {
    for (int64_t j = 0; j < g.n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < g.k; ++p) {
        sum +=
            double(OpAt(g.first, first, i, p)) * OpAt(g.second, second, p, j);
      }
      float& out = c[i + j * g.ldc];
      out = static_cast<float>(alpha * sum + beta * out);
    }
  }
}

// The contract of Backend::Gemm, row-major and naive.
void RowMajorReference(bool trans_a, bool trans_b, int64_t m, int64_t n,
                       int64_t k, float alpha, const float* a, const float* b,
                       float beta, float* c) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        const float av = trans_a ? a[p * m + i] : a[i * k + p];
        const float bv = trans_b ? b[j * k + p] : b[p * n + j];
        sum += double(av) * bv;
      }
      c[i * n + j] = static_cast<float>(alpha * sum + beta * c[i * n + j]);
    }
  }
}

std::vector<float> Random(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

struct Shape {
  int64_t m, n, k;
};

TEST(GemmLayoutTest, ColumnMajorArgumentsReproduceTheRowMajorProduct) {
  for (const Shape& s : {Shape{3, 5, 7}, Shape{1, 4, 2}, Shape{6, 1, 3},
                         Shape{16, 32, 8}, Shape{9, 9, 1}}) {
    for (bool trans_a : {false, true}) {
      for (bool trans_b : {false, true}) {
        const std::vector<float> a = Random(s.m * s.k, 1);
        const std::vector<float> b = Random(s.k * s.n, 2);
        std::vector<float> want = Random(s.m * s.n, 3);
        std::vector<float> got = want;
        RowMajorReference(trans_a, trans_b, s.m, s.n, s.k, 0.5f, a.data(),
                          b.data(), 2.0f, want.data());
        const ColumnMajorGemm g =
            ColumnMajorGemmFor(trans_a, trans_b, s.m, s.n, s.k);
        // cuBLASLt's first operand is our b, its second our a; c is shared.
        ColumnMajorReference(g, 0.5f, b.data(), a.data(), 2.0f, got.data());
        for (int64_t i = 0; i < s.m * s.n; ++i) {
          ASSERT_NEAR(got[i], want[i], 1e-5)
              << "m=" << s.m << " n=" << s.n << " k=" << s.k
              << " trans_a=" << trans_a << " trans_b=" << trans_b << " element "
              << i;
        }
      }
    }
  }
}

TEST(GemmLayoutTest, OperandShapesAreConsistent) {
  for (bool trans_a : {false, true}) {
    for (bool trans_b : {false, true}) {
      const ColumnMajorGemm g = ColumnMajorGemmFor(trans_a, trans_b, 3, 5, 7);
      EXPECT_EQ(g.m, 5);
      EXPECT_EQ(g.n, 3);
      EXPECT_EQ(g.k, 7);
      // op(first) is m x k, op(second) k x n, D m x n.
      EXPECT_EQ(g.first.trans ? g.first.cols : g.first.rows, g.m);
      EXPECT_EQ(g.first.trans ? g.first.rows : g.first.cols, g.k);
      EXPECT_EQ(g.second.trans ? g.second.cols : g.second.rows, g.k);
      EXPECT_EQ(g.second.trans ? g.second.rows : g.second.cols, g.n);
      EXPECT_GE(g.first.ld, g.first.rows);
      EXPECT_GE(g.second.ld, g.second.rows);
      EXPECT_EQ(g.rows_c, g.m);
      EXPECT_EQ(g.cols_c, g.n);
      EXPECT_EQ(g.ldc, g.m);
      EXPECT_EQ(g.first.trans, trans_b);
      EXPECT_EQ(g.second.trans, trans_a);
    }
  }
}

TEST(GemmLayoutTest, AlignmentIsTheLargestPowerOfTwoUpTo256) {
  alignas(512) static char buffer[1024];
  EXPECT_EQ(AlignmentBytes(buffer), 256);
  EXPECT_EQ(AlignmentBytes(buffer + 2), 2);
  EXPECT_EQ(AlignmentBytes(buffer + 16), 16);
  EXPECT_EQ(AlignmentBytes(buffer + 48), 16);
  EXPECT_EQ(AlignmentBytes(buffer + 128), 128);
  EXPECT_EQ(AlignmentBytes(buffer + 1), 1);
  EXPECT_EQ(AlignmentBytes(nullptr), 256);
}

}  // namespace
}  // namespace tessera::executor::cuda
