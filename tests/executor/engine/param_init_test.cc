// FillNormalSlice against NormalAt element by element: the parallel row
// split must give every element exactly the value its global index draws,
// for slices small enough to stay on one thread and large enough to split.
#include "executor/engine/param_init.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace tessera::executor {
namespace {

void ExpectSliceMatchesNormalAt(int64_t global_cols, int64_t r0, int64_t r1,
                                int64_t c0, int64_t c1) {
  const uint64_t seed = 1234, param_id = 7;
  const double std = 0.02;
  const int64_t width = c1 - c0;
  std::vector<float> out((r1 - r0) * width, -1.0f);
  FillNormalSlice(seed, param_id, std, global_cols, r0, r1, c0, c1, out.data());
  int64_t mismatches = 0;
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t c = c0; c < c1; ++c) {
      const float want = static_cast<float>(
          std *
          NormalAt(seed, param_id, static_cast<uint64_t>(r * global_cols + c)));
      if (out[(r - r0) * width + (c - c0)] != want) ++mismatches;
    }
  }
  EXPECT_EQ(mismatches, 0) << "slice rows [" << r0 << ", " << r1 << ") cols ["
                           << c0 << ", " << c1 << ")";
}

TEST(FillNormalSliceTest, SmallSliceMatchesNormalAt) {
  ExpectSliceMatchesNormalAt(/*global_cols=*/64, 3, 11, 5, 40);
}

TEST(FillNormalSliceTest, SliceSplitAcrossThreadsMatchesNormalAt) {
  // 1200 x 900 = 1.08M elements: split over several threads (2^18 each).
  ExpectSliceMatchesNormalAt(/*global_cols=*/2048, 100, 1300, 1000, 1900);
}

TEST(FillNormalSliceTest, EmptySliceWritesNothing) {
  std::vector<float> out(4, -1.0f);
  FillNormalSlice(1, 2, 0.02, 16, 5, 5, 0, 16, out.data());
  for (float v : out) EXPECT_EQ(v, -1.0f);
}

}  // namespace
}  // namespace tessera::executor
