// The flash-attention kernels' shared-memory layouts, checked on the CPU for
// every head dimension they are built for: regions aligned for WMMA and
// disjoint (dQ's scratch may only overlay S and dP), leading dimensions and
// fragment origins legal for WMMA, and the totals within an A100's (the
// smallest target's) opt-in limit.
#include "executor/cuda/attention_layout.h"

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace tessera::executor::cuda {
namespace {

// A100's cudaDevAttrMaxSharedMemoryPerBlockOptin (163 KiB); H100 has 227 KiB.
constexpr size_t kA100OptInBytes = 166912;

struct Region {
  const char* name;
  size_t offset;
  size_t bytes;
};

void ExpectDisjointAndAligned(std::vector<Region> regions, size_t total,
                              int d) {
  std::sort(
      regions.begin(), regions.end(),
      [](const Region& a, const Region& b) { return a.offset < b.offset; });
  for (size_t i = 0; i < regions.size(); ++i) {
    EXPECT_EQ(regions[i].offset % 32, 0u) << regions[i].name << " d=" << d;
    EXPECT_LE(regions[i].offset + regions[i].bytes, total)
        << regions[i].name << " d=" << d;
    if (i + 1 < regions.size()) {
      EXPECT_LE(regions[i].offset + regions[i].bytes, regions[i + 1].offset)
          << regions[i].name << " overlaps " << regions[i + 1].name
          << " d=" << d;
    }
  }
}

// WMMA: a fragment at row r0 (a multiple of 16) and column c0 (a multiple
// of 16) of a matrix with leading dimension ld must be 32-byte aligned, and
// ld a multiple of 16 bytes.
void ExpectFragmentsLegal(int ld, size_t element_bytes, const char* what,
                          int d) {
  EXPECT_EQ((ld * element_bytes) % 16, 0u) << what << " d=" << d;
  EXPECT_EQ((16 * ld * element_bytes) % 32, 0u) << what << " d=" << d;
  EXPECT_EQ((16 * element_bytes) % 32, 0u) << what << " d=" << d;
}

template <int D>
void CheckForward() {
  using L = AttentionForwardLayout<D>;
  ExpectDisjointAndAligned({{"Q", L::kQ, size_t{L::kRows} * L::kLdQkv * 2},
                            {"K", L::kK, size_t{L::kKeys} * L::kLdQkv * 2},
                            {"V", L::kV, size_t{L::kKeys} * L::kLdQkv * 2},
                            {"S", L::kS, size_t{L::kRows} * L::kLdS * 4},
                            {"P", L::kP, size_t{L::kRows} * L::kLdP * 2},
                            {"O", L::kO, size_t{L::kRows} * L::kLdO * 4},
                            {"row max", L::kRowMax, size_t{L::kRows} * 4},
                            {"row sum", L::kRowSum, size_t{L::kRows} * 4},
                            {"row scale", L::kRowScale, size_t{L::kRows} * 4},
                            {"q pos", L::kQPos, size_t{L::kRows} * 4},
                            {"k pos", L::kKPos, size_t{L::kKeys} * 4}},
                           L::kBytes, D);
  ExpectFragmentsLegal(L::kLdQkv, 2, "Q/K/V", D);
  ExpectFragmentsLegal(L::kLdS, 4, "S", D);
  ExpectFragmentsLegal(L::kLdP, 2, "P", D);
  ExpectFragmentsLegal(L::kLdO, 4, "O", D);
  // Four warps of 16 rows; 2 lanes' keys per row in the softmax.
  EXPECT_EQ(L::kRows, 16 * kAttentionThreads / 32);
  EXPECT_EQ(L::kKeys, 64);
  EXPECT_LE(L::kBytes, kA100OptInBytes) << "d=" << D;
  EXPECT_EQ(AttentionForwardSmemBytes(D), L::kBytes);
}

template <int D>
void CheckBackward() {
  using L = AttentionBackwardLayout<D>;
  ExpectDisjointAndAligned({{"K", L::kK, size_t{L::kKeys} * L::kLdQkv * 2},
                            {"V", L::kV, size_t{L::kKeys} * L::kLdQkv * 2},
                            {"Q", L::kQ, size_t{L::kRows} * L::kLdQkv * 2},
                            {"dO", L::kDO, size_t{L::kRows} * L::kLdQkv * 2},
                            {"dK", L::kDK, size_t{L::kKeys} * L::kLdAcc * 4},
                            {"dV", L::kDV, size_t{L::kKeys} * L::kLdAcc * 4},
                            {"S", L::kS, size_t{L::kRows} * L::kLdS * 4},
                            {"dP", L::kDP, size_t{L::kRows} * L::kLdS * 4},
                            {"P", L::kP, size_t{L::kRows} * L::kLdP * 2},
                            {"dS", L::kDS, size_t{L::kRows} * L::kLdP * 2},
                            {"lse", L::kLse, size_t{L::kRows} * 4},
                            {"delta", L::kDelta, size_t{L::kRows} * 4},
                            {"q pos", L::kQPos, size_t{L::kRows} * 4},
                            {"k pos", L::kKPos, size_t{L::kKeys} * 4}},
                           L::kBytes, D);
  // dQ's scratch overlays exactly the S and dP region, nothing else.
  EXPECT_EQ(L::kDQ, L::kS);
  EXPECT_LE(L::kDQ + size_t{L::kRows} * L::kLdAcc * 4, L::kP) << "d=" << D;
  ExpectFragmentsLegal(L::kLdQkv, 2, "K/V/Q/dO", D);
  ExpectFragmentsLegal(L::kLdS, 4, "S/dP", D);
  ExpectFragmentsLegal(L::kLdP, 2, "P/dS", D);
  ExpectFragmentsLegal(L::kLdAcc, 4, "dK/dV/dQ", D);
  // Four warps own 16 keys each of dK/dV; 2 x 4 fragments of S per tile.
  EXPECT_EQ(L::kKeys, 16 * kAttentionThreads / 32);
  EXPECT_EQ(L::kRows, 32);
  EXPECT_LE(L::kBytes, kA100OptInBytes) << "d=" << D;
  EXPECT_EQ(AttentionBackwardSmemBytes(D), L::kBytes);
}

TEST(AttentionLayoutTest, EverySupportedHeadDimFitsAndIsLegal) {
  CheckForward<16>();
  CheckForward<32>();
  CheckForward<64>();
  CheckForward<80>();
  CheckForward<96>();
  CheckForward<128>();
  CheckBackward<16>();
  CheckBackward<32>();
  CheckBackward<64>();
  CheckBackward<80>();
  CheckBackward<96>();
  CheckBackward<128>();
}

TEST(AttentionLayoutTest, SupportedHeadDims) {
  for (int d : {16, 32, 64, 80, 96, 128}) {
    EXPECT_TRUE(AttentionHeadDimSupported(d)) << d;
    EXPECT_GT(AttentionForwardSmemBytes(d), 0u) << d;
  }
  for (int d : {0, 8, 24, 48, 100, 160, 256}) {
    EXPECT_FALSE(AttentionHeadDimSupported(d)) << d;
    EXPECT_EQ(AttentionForwardSmemBytes(d), 0u) << d;
    EXPECT_EQ(AttentionBackwardSmemBytes(d), 0u) << d;
  }
}

}  // namespace
}  // namespace tessera::executor::cuda
