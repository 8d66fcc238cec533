// The CUDA kernels' launch geometry, checked on the CPU: grid sizes, and the
// two-pass column reduction simulated with the kernels' own indexing against
// a direct column sum (so that a plan that skips or repeats rows fails).
#include "executor/cuda/launch_config.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace tessera::executor::cuda {
namespace {

TEST(LaunchConfigTest, ElementwiseCoversEveryElementOncePerPass) {
  EXPECT_EQ(ElementwiseLaunch(0).blocks, 1);
  EXPECT_EQ(ElementwiseLaunch(1).blocks, 1);
  EXPECT_EQ(ElementwiseLaunch(256).blocks, 1);
  EXPECT_EQ(ElementwiseLaunch(257).blocks, 2);
  EXPECT_EQ(ElementwiseLaunch(256 * 1000).blocks, 1000);
  EXPECT_EQ(ElementwiseLaunch(int64_t{1} << 40).blocks, kMaxGridBlocks);
  EXPECT_EQ(ElementwiseLaunch(5).threads, kElementwiseThreads);
}

TEST(LaunchConfigTest, RowThreadsArePowersOfTwoNearEightElementsEach) {
  EXPECT_EQ(RowThreads(1), 32);
  EXPECT_EQ(RowThreads(256), 32);
  EXPECT_EQ(RowThreads(257), 64);  // ceil(257 / 8) = 33
  EXPECT_EQ(RowThreads(2048), 256);
  EXPECT_EQ(RowThreads(8192), 1024);
  EXPECT_EQ(RowThreads(32000), 1024);  // capped
  for (int64_t cols : {1, 7, 100, 1000, 5632, 100000}) {
    const int t = RowThreads(cols);
    EXPECT_EQ(t & (t - 1), 0) << cols;
    EXPECT_EQ(t % 32, 0) << cols;
  }
}

TEST(LaunchConfigTest, RowBlocksAreClamped) {
  EXPECT_EQ(RowBlocks(0), 1);
  EXPECT_EQ(RowBlocks(7), 7);
  EXPECT_EQ(RowBlocks(int64_t{1} << 20), kMaxGridBlocks);
}

// The two passes of RmsNormWeightPartialsKernel / RmsNormWeightFinishKernel,
// indexed exactly as the kernels index.
std::vector<double> SimulateColumnReduce(const ColumnReducePlan& plan,
                                         int64_t rows, int64_t cols,
                                         const std::vector<double>& x,
                                         std::vector<int>* visits) {
  std::vector<double> partials(plan.scratch_floats(), -1e300);
  for (int64_t bx = 0; bx < plan.col_blocks; ++bx) {
    for (int64_t chunk = 0; chunk < plan.row_chunks; ++chunk) {
      for (int t = 0; t < plan.threads; ++t) {
        const int64_t c = bx * plan.threads + t;
        if (c >= cols) continue;
        const int64_t begin = chunk * plan.rows_per_chunk;
        const int64_t end = std::min(begin + plan.rows_per_chunk, rows);
        double sum = 0;
        for (int64_t r = begin; r < end; ++r) {
          sum += x[r * cols + c];
          ++(*visits)[r * cols + c];
        }
        partials[chunk * cols + c] = sum;
      }
    }
  }
  std::vector<double> out(cols, 0.0);
  for (int64_t c = 0; c < cols; ++c) {
    for (int64_t k = 0; k < plan.row_chunks; ++k)
      out[c] += partials[k * cols + c];
  }
  return out;
}

TEST(LaunchConfigTest, ColumnReduceVisitsEveryElementOnce) {
  for (const auto& [rows, cols] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 1},
                                                {3, 5},
                                                {64, 128},
                                                {65, 300},
                                                {1000, 257},
                                                {16384, 40},
                                                {20000, 3}}) {
    const ColumnReducePlan plan = PlanColumnReduce(rows, cols);
    EXPECT_GE(plan.col_blocks * plan.threads, cols);
    EXPECT_LE(plan.threads, 256);
    EXPECT_GE(plan.row_chunks * plan.rows_per_chunk, rows);
    EXPECT_LT((plan.row_chunks - 1) * plan.rows_per_chunk, rows)
        << "an empty chunk: rows " << rows;
    EXPECT_LE(plan.row_chunks, 256);
    EXPECT_EQ(plan.scratch_floats(), plan.row_chunks * cols);
    std::vector<double> x(rows * cols);
    for (int64_t i = 0; i < rows * cols; ++i) x[i] = 1.0 + (i % 7) * 0.25;
    std::vector<int> visits(rows * cols, 0);
    const std::vector<double> got =
        SimulateColumnReduce(plan, rows, cols, x, &visits);
    for (int v : visits) ASSERT_EQ(v, 1) << rows << " x " << cols;
    for (int64_t c = 0; c < cols; ++c) {
      double want = 0;
      for (int64_t r = 0; r < rows; ++r) want += x[r * cols + c];
      EXPECT_DOUBLE_EQ(got[c], want) << rows << " x " << cols << " col " << c;
    }
  }
}

TEST(LaunchConfigTest, SumSquaresBlocksAreBounded) {
  EXPECT_EQ(SumSquaresBlocks(1), 1);
  EXPECT_EQ(SumSquaresBlocks(4 * kElementwiseThreads + 1), 2);
  EXPECT_EQ(SumSquaresBlocks(int64_t{1} << 40), 1024);
}

}  // namespace
}  // namespace tessera::executor::cuda
