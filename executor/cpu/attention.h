// Causal grouped-query attention on the CPU in the block form that ring
// attention needs: flash-style (Dao et al. 2022) tiles of queries against
// tiles of keys with an online softmax, causality by global positions, and a
// merge of one key block's (out, lse) into a running one. The backward
// recomputes each tile's probabilities from the final log-sum-exp, so no
// call ever holds more than one tile of scores. T is float or double.
//
// defines: AttentionForward, AttentionBackward
//
//   // Ring attention over two key blocks, then the backward of each.
//   cpu::AttentionForward<float>(shape0, q, k0, v0, q_pos, k_pos0,
//                                /*accumulate=*/false, out, lse);
//   cpu::AttentionForward<float>(shape1, q, k1, v1, q_pos, k_pos1,
//                                /*accumulate=*/true, out, lse);
//   cpu::AttentionBackward<float>(shape0, dout, q, k0, v0, out, lse, q_pos,
//                                 k_pos0, dq, dk0, dv0);  // likewise block 1
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "executor/backend.h"
#include "executor/cpu/fast_exp.h"
#include "executor/cpu/gemm.h"

namespace tessera::executor::cpu {
namespace internal {

// Tile sizes: a 64 x 64 score tile of doubles is 32 KiB (an L1/L2 tile).
constexpr int64_t kAttentionTileQ = 64;
constexpr int64_t kAttentionTileK = 64;

struct PositionRange {
  int32_t min = 0;
  int32_t max = 0;
};

inline PositionRange RangeOf(const int32_t* pos, int64_t n) {
  PositionRange r{pos[0], pos[0]};
  for (int64_t i = 1; i < n; ++i) {
    r.min = std::min(r.min, pos[i]);
    r.max = std::max(r.max, pos[i]);
  }
  return r;
}

// Where key c is in the future of query r (k_pos[c] > q_pos[r]), s[r][c] =
// -inf. s is [rows, cols].
template <typename T>
void MaskFuture(const int32_t* q_pos, int64_t rows, const int32_t* k_pos,
                int64_t cols, T* s) {
  const T neg_inf = -std::numeric_limits<T>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    T* sr = s + r * cols;
    const int32_t qp = q_pos[r];
    for (int64_t c = 0; c < cols; ++c) sr[c] = k_pos[c] > qp ? neg_inf : sr[c];
  }
}

// Pointers to one (batch row, query head) slice and its kv head; consecutive
// tokens of a head are `q_stride` (q, out, dq) or `kv_stride` (k, v, dk, dv)
// elements apart.
struct HeadSlice {
  int64_t q_offset = 0;   // into q, out, dout, dq
  int64_t kv_offset = 0;  // into k, v, dk, dv
  int64_t lse_offset = 0;
};

inline HeadSlice SliceOf(const AttentionShape& s, int64_t b, int64_t h) {
  const int64_t kv_head = h / (s.heads / s.kv_heads);
  return HeadSlice{(b * s.q_len * s.heads + h) * s.head_dim,
                   (b * s.kv_len * s.kv_heads + kv_head) * s.head_dim,
                   (b * s.heads + h) * s.q_len};
}

inline std::vector<PositionRange> TileRanges(const int32_t* pos, int64_t n,
                                             int64_t tile) {
  std::vector<PositionRange> ranges;
  for (int64_t i0 = 0; i0 < n; i0 += tile) {
    ranges.push_back(RangeOf(pos + i0, std::min(tile, n - i0)));
  }
  return ranges;
}

}  // namespace internal

// q [batch, q_len, heads, head_dim]; k, v [batch, kv_len, kv_heads,
// head_dim]; q_pos [q_len], k_pos [kv_len] global positions: query i sees key
// j iff k_pos[j] <= q_pos[i]. Scale 1/sqrt(head_dim). Query head j reads kv
// head j / (heads / kv_heads).
// out [batch, q_len, heads, head_dim]; lse [batch, heads, q_len] the natural
// log of the softmax denominator, -inf where no key is visible (out 0 there).
// accumulate = false writes out/lse from this key block; true merges it into
// the running (out, lse): lse' = log(exp(lse) + exp(lse_b)),
// out' = out exp(lse - lse') + out_b exp(lse_b - lse') (Milakov & Gimelshein
// 2018, online softmax; Liu et al. 2023, ring attention).
template <typename T>
void AttentionForward(const AttentionShape& shape, const T* q, const T* k,
                      const T* v, const int32_t* q_pos, const int32_t* k_pos,
                      bool accumulate, T* out, T* lse) {
  using internal::kAttentionTileK;
  using internal::kAttentionTileQ;
  const T neg_inf = -std::numeric_limits<T>::infinity();
  const int64_t d = shape.head_dim;
  const int64_t q_stride = shape.heads * d;
  const int64_t kv_stride = shape.kv_heads * d;
  const T scale = T(1.0 / std::sqrt(double(d)));
  if (shape.q_len <= 0) return;
  const std::vector<internal::PositionRange> k_ranges =
      shape.kv_len > 0
          ? internal::TileRanges(k_pos, shape.kv_len, kAttentionTileK)
          : std::vector<internal::PositionRange>{};
  std::vector<T> s(kAttentionTileQ * kAttentionTileK);
  std::vector<T> acc(kAttentionTileQ * d);
  std::vector<T> row_max(kAttentionTileQ), row_sum(kAttentionTileQ);

  for (int64_t b = 0; b < shape.batch; ++b) {
    for (int64_t h = 0; h < shape.heads; ++h) {
      const internal::HeadSlice hs = internal::SliceOf(shape, b, h);
      for (int64_t i0 = 0; i0 < shape.q_len; i0 += kAttentionTileQ) {
        const int64_t bq = std::min(kAttentionTileQ, shape.q_len - i0);
        const internal::PositionRange qr = internal::RangeOf(q_pos + i0, bq);
        const T* q_tile = q + hs.q_offset + i0 * q_stride;
        std::fill_n(row_max.begin(), bq, neg_inf);
        std::fill_n(row_sum.begin(), bq, T(0));
        std::fill_n(acc.begin(), bq * d, T(0));
        for (size_t kb = 0; kb < k_ranges.size(); ++kb) {
          const internal::PositionRange kr = k_ranges[kb];
          if (kr.min > qr.max) continue;  // every key in every query's future
          const int64_t j0 = int64_t(kb) * kAttentionTileK;
          const int64_t bk = std::min(kAttentionTileK, shape.kv_len - j0);
          const int64_t kv_at = hs.kv_offset + j0 * kv_stride;
          // s = scale q k^T
          Gemm<T>(false, true, bq, bk, d, scale, q_tile, q_stride, k + kv_at,
                  kv_stride, T(0), s.data(), bk);
          if (kr.max > qr.min) {
            internal::MaskFuture(q_pos + i0, bq, k_pos + j0, bk, s.data());
          }
          for (int64_t r = 0; r < bq; ++r) {
            T* sr = s.data() + r * bk;
            const T mx = *std::max_element(sr, sr + bk);
            if (mx == neg_inf) {  // no visible key in this tile
              std::fill_n(sr, bk, T(0));
              continue;
            }
            const T m_new = std::max(row_max[r], mx);
            const T rescale = Exp(row_max[r] - m_new);  // 0 on the first tile
            row_sum[r] =
                row_sum[r] * rescale + T(ExpShiftedSum(sr, bk, m_new, sr));
            if (rescale != T(1)) {
              T* acc_r = acc.data() + r * d;
              for (int64_t c = 0; c < d; ++c) acc_r[c] *= rescale;
            }
            row_max[r] = m_new;
          }
          // acc += p v
          Gemm<T>(false, false, bq, d, bk, T(1), s.data(), bk, v + kv_at,
                  kv_stride, T(1), acc.data(), d);
        }
        for (int64_t r = 0; r < bq; ++r) {
          T* o = out + hs.q_offset + (i0 + r) * q_stride;
          T* lse_r = lse + hs.lse_offset + i0 + r;
          const T* acc_r = acc.data() + r * d;
          const bool visible = row_sum[r] > T(0);
          const T lse_b =
              visible ? row_max[r] + T(std::log(row_sum[r])) : neg_inf;
          const T inv_sum = visible ? T(1) / row_sum[r] : T(0);
          if (!accumulate || *lse_r == neg_inf) {
            if (!accumulate || visible) {
              for (int64_t c = 0; c < d; ++c) o[c] = acc_r[c] * inv_sum;
              *lse_r = lse_b;
            }
            continue;
          }
          if (!visible) continue;  // this block adds nothing to the row
          const T lse_old = *lse_r;
          const T lse_new = std::max(lse_old, lse_b) +
                            T(std::log1p(std::exp(-std::abs(lse_old - lse_b))));
          const T w_old = Exp(lse_old - lse_new);
          const T w_b = Exp(lse_b - lse_new) * inv_sum;
          for (int64_t c = 0; c < d; ++c) o[c] = o[c] * w_old + acc_r[c] * w_b;
          *lse_r = lse_new;
        }
      }
    }
  }
}

// Given dout and the final (out, lse) of the query rows over ALL key blocks,
// adds this key block's contribution into dq [batch, q_len, heads, head_dim]
// and dk, dv [batch, kv_len, kv_heads, head_dim]. Per tile (Dao 2023,
// FlashAttention-2 backward): p = exp(s - lse), dv += p^T dout,
// dp = dout v^T, ds = p (dp - D) with D = rowsum(dout * out),
// dq += scale ds k, dk += scale ds^T q. Rows with lse = -inf add nothing.
template <typename T>
void AttentionBackward(const AttentionShape& shape, const T* dout, const T* q,
                       const T* k, const T* v, const T* out, const T* lse,
                       const int32_t* q_pos, const int32_t* k_pos, T* dq, T* dk,
                       T* dv) {
  using internal::kAttentionTileK;
  using internal::kAttentionTileQ;
  const T neg_inf = -std::numeric_limits<T>::infinity();
  const int64_t d = shape.head_dim;
  const int64_t q_stride = shape.heads * d;
  const int64_t kv_stride = shape.kv_heads * d;
  const T scale = T(1.0 / std::sqrt(double(d)));
  if (shape.q_len <= 0 || shape.kv_len <= 0) return;
  const std::vector<internal::PositionRange> k_ranges =
      internal::TileRanges(k_pos, shape.kv_len, kAttentionTileK);
  std::vector<T> p(kAttentionTileQ * kAttentionTileK);
  std::vector<T> ds(kAttentionTileQ * kAttentionTileK);
  std::vector<T> row_dot(kAttentionTileQ);  // D

  for (int64_t b = 0; b < shape.batch; ++b) {
    for (int64_t h = 0; h < shape.heads; ++h) {
      const internal::HeadSlice hs = internal::SliceOf(shape, b, h);
      for (int64_t i0 = 0; i0 < shape.q_len; i0 += kAttentionTileQ) {
        const int64_t bq = std::min(kAttentionTileQ, shape.q_len - i0);
        const internal::PositionRange qr = internal::RangeOf(q_pos + i0, bq);
        const int64_t q_at = hs.q_offset + i0 * q_stride;
        const T* lse_tile = lse + hs.lse_offset + i0;
        bool any_visible = false;
        for (int64_t r = 0; r < bq; ++r) {
          const T* dout_r = dout + q_at + r * q_stride;
          const T* out_r = out + q_at + r * q_stride;
          double dot = 0;
          for (int64_t c = 0; c < d; ++c) dot += double(dout_r[c]) * out_r[c];
          row_dot[r] = T(dot);
          any_visible = any_visible || lse_tile[r] != neg_inf;
        }
        if (!any_visible) continue;
        for (size_t kb = 0; kb < k_ranges.size(); ++kb) {
          const internal::PositionRange kr = k_ranges[kb];
          if (kr.min > qr.max) continue;
          const int64_t j0 = int64_t(kb) * kAttentionTileK;
          const int64_t bk = std::min(kAttentionTileK, shape.kv_len - j0);
          const int64_t kv_at = hs.kv_offset + j0 * kv_stride;
          // p = exp(scale q k^T - lse), 0 where masked or lse = -inf.
          Gemm<T>(false, true, bq, bk, d, scale, q + q_at, q_stride, k + kv_at,
                  kv_stride, T(0), p.data(), bk);
          if (kr.max > qr.min) {
            internal::MaskFuture(q_pos + i0, bq, k_pos + j0, bk, p.data());
          }
          for (int64_t r = 0; r < bq; ++r) {
            T* pr = p.data() + r * bk;
            const T l = lse_tile[r];
            if (l == neg_inf) {
              std::fill_n(pr, bk, T(0));
              continue;
            }
            for (int64_t c = 0; c < bk; ++c) pr[c] = Exp(pr[c] - l);
          }
          // dv += p^T dout
          Gemm<T>(true, false, bk, d, bq, T(1), p.data(), bk, dout + q_at,
                  q_stride, T(1), dv + kv_at, kv_stride);
          // ds = p (dout v^T - D)
          Gemm<T>(false, true, bq, bk, d, T(1), dout + q_at, q_stride,
                  v + kv_at, kv_stride, T(0), ds.data(), bk);
          for (int64_t r = 0; r < bq; ++r) {
            T* dsr = ds.data() + r * bk;
            const T* pr = p.data() + r * bk;
            const T dr = row_dot[r];
            for (int64_t c = 0; c < bk; ++c) dsr[c] = pr[c] * (dsr[c] - dr);
          }
          // dq += scale ds k; dk += scale ds^T q
          Gemm<T>(false, false, bq, d, bk, scale, ds.data(), bk, k + kv_at,
                  kv_stride, T(1), dq + q_at, q_stride);
          Gemm<T>(true, false, bk, d, bq, scale, ds.data(), bk, q + q_at,
                  q_stride, T(1), dk + kv_at, kv_stride);
        }
      }
    }
  }
}

}  // namespace tessera::executor::cpu
