#include "executor/cuda/gemm_layout.h"

#include <cstdint>

namespace tessera::executor::cuda {

ColumnMajorGemm ColumnMajorGemmFor(bool trans_a, bool trans_b, int64_t m,
                                   int64_t n, int64_t k) {
  ColumnMajorGemm g;
  g.m = n;
  g.n = m;
  g.k = k;
  // Row-major b is [k,n] (ld n), or [n,k] (ld k) when transposed. Read
  // column-major it is stored [n,k] (ld n): op = none gives b^T = op(b)^T;
  // or stored [k,n] (ld k): op = transpose gives b = op(b)^T.
  g.first = trans_b ? ColumnMajorOperand{true, k, n, k}
                    : ColumnMajorOperand{false, n, k, n};
  // Row-major a is [m,k] (ld k), or [k,m] (ld m) when transposed: stored
  // [k,m] (ld k), op none gives a^T = op(a)^T; or stored [m,k] (ld m), op
  // transpose gives a = op(a)^T.
  g.second = trans_a ? ColumnMajorOperand{true, m, k, m}
                     : ColumnMajorOperand{false, k, m, k};
  g.rows_c = n;
  g.cols_c = m;
  g.ldc = n;
  return g;
}

int AlignmentBytes(const void* pointer) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  int alignment = 1;
  while (alignment < 256 &&
         (address & static_cast<uintptr_t>(alignment)) == 0) {
    alignment *= 2;
  }
  return alignment;
}

}  // namespace tessera::executor::cuda
