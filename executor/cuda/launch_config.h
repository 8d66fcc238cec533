// Launch geometry of the CUDA backend's kernels, as plain C++ so that it is
// unit-tested on machines without a GPU: how many blocks and threads an
// elementwise, per-row or column-reducing kernel gets, and how big the scratch
// buffers of the two-pass reductions are.
//
//   Launch l = ElementwiseLaunch(n);
//   Kernel<<<l.blocks, l.threads, 0, stream>>>(..., n);  // grid-stride loop
#pragma once

#include <cstdint>

namespace tessera::executor::cuda {

// Threads per block of the elementwise kernels.
inline constexpr int kElementwiseThreads = 256;
// The most blocks a grid-stride launch asks for: more than any GPU runs at
// once (132 SMs x 16 blocks), and within gridDim.x's limit.
inline constexpr int64_t kMaxGridBlocks = 65535;

struct Launch {
  int64_t blocks = 1;
  int threads = 32;
};

// One element per thread per pass of a grid-stride loop over n elements: at
// least one block, at most kMaxGridBlocks.
Launch ElementwiseLaunch(int64_t n);

// Threads of a kernel that gives each row of `cols` elements one block: about
// 8 elements per thread, a power of two in [32, 1024] (whole warps, for the
// block reductions).
int RowThreads(int64_t cols);

// Blocks of a one-block-per-row kernel: `rows`, at least 1, at most
// kMaxGridBlocks (the kernel strides over the rest).
int64_t RowBlocks(int64_t rows);

// A column sum over `rows` rows in two passes (RMSNorm's weight gradient):
// pass 1 gives block (x, chunk) the columns [x*threads, (x+1)*threads) of rows
// [chunk*rows_per_chunk, ...) and writes one partial per chunk and column
// (scratch of row_chunks * cols floats); pass 2 adds the chunks' partials in
// chunk order, so the result does not depend on timing.
struct ColumnReducePlan {
  int64_t row_chunks = 1;
  int64_t rows_per_chunk = 1;
  int threads = 32;
  int64_t col_blocks = 1;
  int64_t cols = 0;
  // Floats of scratch pass 1 writes: [row_chunks, cols].
  int64_t scratch_floats() const { return row_chunks * cols; }
};
ColumnReducePlan PlanColumnReduce(int64_t rows, int64_t cols);

// Blocks of SumSquares' first pass (each writes one double partial; the host
// adds them in block order).
int64_t SumSquaresBlocks(int64_t n);

}  // namespace tessera::executor::cuda
