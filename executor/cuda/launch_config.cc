#include "executor/cuda/launch_config.h"

#include <algorithm>

namespace tessera::executor::cuda {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The smallest power of two >= want, within [32, 1024].
int PowerOfTwoThreads(int64_t want) {
  int threads = 32;
  while (threads < want && threads < 1024) threads *= 2;
  return threads;
}

}  // namespace

Launch ElementwiseLaunch(int64_t n) {
  const int64_t blocks = CeilDiv(std::max<int64_t>(n, 1), kElementwiseThreads);
  return Launch{std::min(blocks, kMaxGridBlocks), kElementwiseThreads};
}

int RowThreads(int64_t cols) {
  return PowerOfTwoThreads(CeilDiv(std::max<int64_t>(cols, 1), 8));
}

int64_t RowBlocks(int64_t rows) {
  return std::clamp<int64_t>(rows, 1, kMaxGridBlocks);
}

ColumnReducePlan PlanColumnReduce(int64_t rows, int64_t cols) {
  ColumnReducePlan plan;
  plan.cols = cols;
  plan.threads = PowerOfTwoThreads(std::min<int64_t>(cols, 256));
  plan.col_blocks = CeilDiv(std::max<int64_t>(cols, 1), plan.threads);
  // About 64 rows per chunk, at most 256 chunks: enough blocks to fill a GPU
  // (col_blocks * row_chunks) while the scratch stays small.
  plan.row_chunks = std::clamp<int64_t>(CeilDiv(rows, 64), 1, 256);
  plan.rows_per_chunk = CeilDiv(std::max<int64_t>(rows, 1), plan.row_chunks);
  plan.row_chunks = CeilDiv(std::max<int64_t>(rows, 1), plan.rows_per_chunk);
  return plan;
}

int64_t SumSquaresBlocks(int64_t n) {
  return std::clamp<int64_t>(CeilDiv(n, 4 * kElementwiseThreads), 1, 1024);
}

}  // namespace tessera::executor::cuda
