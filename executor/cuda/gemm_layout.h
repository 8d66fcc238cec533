// How a row-major GEMM (the Backend contract's) becomes cuBLASLt's
// column-major one. A row-major [r, c] matrix with row length ld is, read
// column-major, its transpose [c, r] with the same ld. So the row-major
//   C[m,n] = op(A)[m,k] op(B)[k,n]
// is the column-major
//   C^T[n,m] = op(B)^T[n,k] op(A)^T[k,m]:
// cuBLASLt's first operand is our B, its second our A, its m and n are our n
// and m, and each operand keeps its own transpose flag. Plain C++, so the
// mapping is checked on a CPU against a column-major reference GEMM.
//
//   ColumnMajorGemm g = ColumnMajorGemmFor(trans_a, trans_b, m, n, k);
//   // cublasLtMatmul(..., first operand = b with g.first, second = a with
//   //                g.second, C/D with g.rows_c x g.cols_c, ld g.ldc)
#pragma once

#include <cstdint>

namespace tessera::executor::cuda {

// One operand as cuBLASLt describes it: the stored matrix is rows x cols,
// column-major, leading dimension ld, and op() transposes it when `trans`.
struct ColumnMajorOperand {
  bool trans = false;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 0;
};

struct ColumnMajorGemm {
  int64_t m = 0;  // rows of D (= the row-major n)
  int64_t n = 0;  // columns of D (= the row-major m)
  int64_t k = 0;
  ColumnMajorOperand first;   // the row-major B
  ColumnMajorOperand second;  // the row-major A
  int64_t rows_c = 0;         // C and D: m x n, column-major
  int64_t cols_c = 0;
  int64_t ldc = 0;
};

// The column-major problem that computes the row-major c[m,n] = op(a)[m,k] *
// op(b)[k,n] with contiguous rows (lda = trans_a ? m : k, ldb = trans_b ? k :
// n, ldc = n), as backend.h's Gemm states them.
ColumnMajorGemm ColumnMajorGemmFor(bool trans_a, bool trans_b, int64_t m,
                                   int64_t n, int64_t k);

// The largest power of two (at most 256) that divides the address: what
// cuBLASLt's MIN_ALIGNMENT preferences ask for. 256 for nullptr.
int AlignmentBytes(const void* pointer);

}  // namespace tessera::executor::cuda
