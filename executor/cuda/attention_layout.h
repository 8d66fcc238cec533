// The tiles and shared-memory layout of the CUDA flash-attention kernels
// (attention.cuh), as compile-time constants that the kernels and the host
// tests read alike. Plain C++ (no CUDA headers).
//
// WMMA (bf16 16x16x16, fp32 accumulate) constrains the layout: a fragment's
// pointer must be 32-byte aligned and its leading dimension a multiple of 8
// elements (16-bit types) or 4 (float). Every fragment starts at a multiple of
// 16 rows and 16 columns, so rows padded to (width + 8) bf16 or (width + 4)
// float keep both rules (16 rows x 2 bytes x (width + 8) is a multiple of 32
// when width is a multiple of 16) and break the bank conflicts of unpadded
// power-of-two rows.
//
//   using L = AttentionForwardLayout<128>;
//   static_assert(L::kBytes <= 227 * 1024);
#pragma once

#include <cstddef>

namespace tessera::executor::cuda {

// Head dimensions the kernels are built for (multiples of 16 up to 128).
inline constexpr int kAttentionHeadDims[] = {16, 32, 64, 80, 96, 128};
constexpr bool AttentionHeadDimSupported(int head_dim) {
  for (int d : kAttentionHeadDims) {
    if (d == head_dim) return true;
  }
  return false;
}

// Threads of both kernels: four warps.
inline constexpr int kAttentionThreads = 128;

constexpr size_t AlignTo32(size_t bytes) { return (bytes + 31) / 32 * 32; }

// Forward: one block per (64 query rows, query head, batch row); each warp
// owns 16 query rows. Per 64-key tile: S = Q K^T (f32), online softmax into P
// (bf16), O = O * alpha + P V with O in shared memory (f32).
template <int D>
struct AttentionForwardLayout {
  static constexpr int kRows = 64;        // query rows per block
  static constexpr int kKeys = 64;        // keys per tile
  static constexpr int kLdQkv = D + 8;    // bf16 row stride of Q, K, V
  static constexpr int kLdS = kKeys + 4;  // f32 row stride of S
  static constexpr int kLdP = kKeys + 8;  // bf16 row stride of P
  static constexpr int kLdO = D + 4;      // f32 row stride of O
  static constexpr size_t kQ = 0;
  static constexpr size_t kK = kQ + AlignTo32(size_t{kRows} * kLdQkv * 2);
  static constexpr size_t kV = kK + AlignTo32(size_t{kKeys} * kLdQkv * 2);
  static constexpr size_t kS = kV + AlignTo32(size_t{kKeys} * kLdQkv * 2);
  static constexpr size_t kP = kS + AlignTo32(size_t{kRows} * kLdS * 4);
  static constexpr size_t kO = kP + AlignTo32(size_t{kRows} * kLdP * 2);
  // Per query row: running max (log2 domain), running sum, this tile's
  // rescale factor (floats); then the rows' and the tile keys' positions.
  static constexpr size_t kRowMax = kO + AlignTo32(size_t{kRows} * kLdO * 4);
  static constexpr size_t kRowSum = kRowMax + AlignTo32(kRows * 4);
  static constexpr size_t kRowScale = kRowSum + AlignTo32(kRows * 4);
  static constexpr size_t kQPos = kRowScale + AlignTo32(kRows * 4);
  static constexpr size_t kKPos = kQPos + AlignTo32(kRows * 4);
  static constexpr size_t kBytes = kKPos + AlignTo32(kKeys * 4);
};

// Backward: one block per (64-key tile, kv head, batch row), looping over the
// query heads of the group and 32-row query tiles. dK and dV accumulate in
// shared memory (f32) and are added to global memory once; dQ goes out with
// atomicAdd per query tile. dQ's scratch reuses the S and dP region.
template <int D>
struct AttentionBackwardLayout {
  static constexpr int kKeys = 64;  // keys per block (16 per warp for dK/dV)
  static constexpr int kRows = 32;  // query rows per inner tile
  static constexpr int kLdQkv = D + 8;    // bf16 row stride of K, V, Q, dO
  static constexpr int kLdS = kKeys + 4;  // f32 row stride of S, dP
  static constexpr int kLdP = kKeys + 8;  // bf16 row stride of P, dS
  static constexpr int kLdAcc = D + 4;    // f32 row stride of dK, dV, dQ
  static constexpr size_t kK = 0;
  static constexpr size_t kV = kK + AlignTo32(size_t{kKeys} * kLdQkv * 2);
  static constexpr size_t kQ = kV + AlignTo32(size_t{kKeys} * kLdQkv * 2);
  static constexpr size_t kDO = kQ + AlignTo32(size_t{kRows} * kLdQkv * 2);
  static constexpr size_t kDK = kDO + AlignTo32(size_t{kRows} * kLdQkv * 2);
  static constexpr size_t kDV = kDK + AlignTo32(size_t{kKeys} * kLdAcc * 4);
  static constexpr size_t kS = kDV + AlignTo32(size_t{kKeys} * kLdAcc * 4);
  static constexpr size_t kDP = kS + AlignTo32(size_t{kRows} * kLdS * 4);
  static constexpr size_t kDQ = kS;  // overlays S and dP once they are used
  static constexpr size_t kP = kDP + AlignTo32(size_t{kRows} * kLdS * 4);
  static constexpr size_t kDS = kP + AlignTo32(size_t{kRows} * kLdP * 2);
  // Per query row of the tile: lse, D = rowsum(dO * O) (floats), positions.
  static constexpr size_t kLse = kDS + AlignTo32(size_t{kRows} * kLdP * 2);
  static constexpr size_t kDelta = kLse + AlignTo32(kRows * 4);
  static constexpr size_t kQPos = kDelta + AlignTo32(kRows * 4);
  static constexpr size_t kKPos = kQPos + AlignTo32(kRows * 4);
  static constexpr size_t kBytes = kKPos + AlignTo32(kKeys * 4);
  static_assert(kP - kS >= size_t{kRows} * kLdAcc * 4,
                "dQ's scratch must fit in the S and dP region");
};

// Shared memory a head dimension's kernels need (0 when unsupported).
constexpr size_t AttentionForwardSmemBytes(int head_dim) {
  switch (head_dim) {
    case 16:
      return AttentionForwardLayout<16>::kBytes;
    case 32:
      return AttentionForwardLayout<32>::kBytes;
    case 64:
      return AttentionForwardLayout<64>::kBytes;
    case 80:
      return AttentionForwardLayout<80>::kBytes;
    case 96:
      return AttentionForwardLayout<96>::kBytes;
    case 128:
      return AttentionForwardLayout<128>::kBytes;
    default:
      return 0;
  }
}
constexpr size_t AttentionBackwardSmemBytes(int head_dim) {
  switch (head_dim) {
    case 16:
      return AttentionBackwardLayout<16>::kBytes;
    case 32:
      return AttentionBackwardLayout<32>::kBytes;
    case 64:
      return AttentionBackwardLayout<64>::kBytes;
    case 80:
      return AttentionBackwardLayout<80>::kBytes;
    case 96:
      return AttentionBackwardLayout<96>::kBytes;
    case 128:
      return AttentionBackwardLayout<128>::kBytes;
    default:
      return 0;
  }
}

}  // namespace tessera::executor::cuda
