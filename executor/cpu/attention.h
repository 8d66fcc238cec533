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

// Tiles: the query heads that share one kv head are processed together
// (their rows stacked, token-major), about kAttentionTileRows query rows
// against kAttentionTileK keys, so each GEMM is as tall as the group allows.
constexpr int64_t kAttentionTileRows = 128;
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

inline std::vector<PositionRange> TileRanges(const int32_t* pos, int64_t n,
                                             int64_t tile) {
  std::vector<PositionRange> ranges;
  for (int64_t i0 = 0; i0 < n; i0 += tile) {
    ranges.push_back(RangeOf(pos + i0, std::min(tile, n - i0)));
  }
  return ranges;
}

// The layout of one (batch row, kv head) problem: `group` query heads read
// kv head g. Query rows of a tile are stacked token-major: row i * group + j
// is token i0 + i of query head g * group + j.
struct GroupView {
  int64_t group = 0;       // query heads per kv head
  int64_t row_width = 0;   // group * head_dim: one token's heads of the group
  int64_t q_stride = 0;    // heads * head_dim, between tokens in q/out/dq
  int64_t kv_stride = 0;   // kv_heads * head_dim, between tokens in k/v
  int64_t q_offset = 0;    // token 0, head g * group, in q/out/dout/dq
  int64_t kv_offset = 0;   // token 0, kv head g, in k/v/dk/dv
  int64_t lse_offset = 0;  // head g * group, query 0, in lse
};

inline GroupView ViewOf(const AttentionShape& s, int64_t b, int64_t g) {
  const int64_t group = s.heads / s.kv_heads;
  return GroupView{group,
                   group * s.head_dim,
                   s.heads * s.head_dim,
                   s.kv_heads * s.head_dim,
                   (b * s.q_len * s.heads + g * group) * s.head_dim,
                   (b * s.kv_len * s.kv_heads + g) * s.head_dim,
                   (b * s.heads + g * group) * s.q_len};
}

// dst [bq * group, head_dim] = the group's rows of tokens [0, bq) of src
// (src at the tile's first token).
template <typename T>
void PackRows(const T* src, const GroupView& gv, int64_t bq, T* dst) {
  for (int64_t i = 0; i < bq; ++i) {
    std::copy_n(src + i * gv.q_stride, gv.row_width, dst + i * gv.row_width);
  }
}

// Where key c is in the future of the query of row r (k_pos[c] >
// q_pos[r / group]), s[r][c] = -inf. s is [bq * group, cols].
template <typename T>
void MaskFuture(const int32_t* q_pos, int64_t bq, int64_t group,
                const int32_t* k_pos, int64_t cols, T* s) {
  const T neg_inf = -std::numeric_limits<T>::infinity();
  for (int64_t r = 0; r < bq * group; ++r) {
    T* sr = s + r * cols;
    const int32_t qp = q_pos[r / group];
    for (int64_t c = 0; c < cols; ++c) sr[c] = k_pos[c] > qp ? neg_inf : sr[c];
  }
}

// max_j x[j] (-inf for n = 0), in 8 lanes so that it vectorizes.
template <typename T>
T RowMax(const T* x, int64_t n) {
  T lanes[8];
  std::fill_n(lanes, 8, -std::numeric_limits<T>::infinity());
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    for (int l = 0; l < 8; ++l) lanes[l] = std::max(lanes[l], x[j + l]);
  }
  for (; j < n; ++j) lanes[0] = std::max(lanes[0], x[j]);
  return *std::max_element(lanes, lanes + 8);
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
// 2018, online softmax; Liu et al. 2023, ring attention). A running row with
// lse = -inf is empty whatever its out holds (weight exp(-inf) = 0): it takes
// the block's row, so Fill(lse, -inf) then only accumulating calls also works.
template <typename T>
void AttentionForward(const AttentionShape& shape, const T* q, const T* k,
                      const T* v, const int32_t* q_pos, const int32_t* k_pos,
                      bool accumulate, T* out, T* lse) {
  using internal::kAttentionTileK;
  const T neg_inf = -std::numeric_limits<T>::infinity();
  const int64_t d = shape.head_dim;
  const int64_t group = shape.heads / shape.kv_heads;
  const int64_t tile_q = std::max<int64_t>(
      1, internal::kAttentionTileRows / group);  // tokens per tile
  const int64_t max_rows = tile_q * group;
  const T scale = T(1.0 / std::sqrt(double(d)));
  if (shape.q_len <= 0) return;
  const std::vector<internal::PositionRange> k_ranges =
      shape.kv_len > 0
          ? internal::TileRanges(k_pos, shape.kv_len, kAttentionTileK)
          : std::vector<internal::PositionRange>{};
  std::vector<T> qp(max_rows * d), s(max_rows * kAttentionTileK);
  std::vector<T> acc(max_rows * d), row_max(max_rows), row_sum(max_rows);

  for (int64_t b = 0; b < shape.batch; ++b) {
    for (int64_t g = 0; g < shape.kv_heads; ++g) {
      const internal::GroupView gv = internal::ViewOf(shape, b, g);
      for (int64_t i0 = 0; i0 < shape.q_len; i0 += tile_q) {
        const int64_t bq = std::min(tile_q, shape.q_len - i0);
        const int64_t rows = bq * group;
        const internal::PositionRange qr = internal::RangeOf(q_pos + i0, bq);
        internal::PackRows(q + gv.q_offset + i0 * gv.q_stride, gv, bq,
                           qp.data());
        std::fill_n(row_max.begin(), rows, neg_inf);
        std::fill_n(row_sum.begin(), rows, T(0));
        std::fill_n(acc.begin(), rows * d, T(0));
        for (size_t kb = 0; kb < k_ranges.size(); ++kb) {
          const internal::PositionRange kr = k_ranges[kb];
          if (kr.min > qr.max) continue;  // every key in every query's future
          const int64_t j0 = int64_t(kb) * kAttentionTileK;
          const int64_t bk = std::min(kAttentionTileK, shape.kv_len - j0);
          const int64_t kv_at = gv.kv_offset + j0 * gv.kv_stride;
          // s = scale q k^T
          Gemm<T>(false, true, rows, bk, d, scale, qp.data(), d, k + kv_at,
                  gv.kv_stride, T(0), s.data(), bk);
          if (kr.max > qr.min) {
            internal::MaskFuture(q_pos + i0, bq, group, k_pos + j0, bk,
                                 s.data());
          }
          for (int64_t r = 0; r < rows; ++r) {
            T* sr = s.data() + r * bk;
            const T mx = internal::RowMax(sr, bk);
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
          Gemm<T>(false, false, rows, d, bk, T(1), s.data(), bk, v + kv_at,
                  gv.kv_stride, T(1), acc.data(), d);
        }
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t i = r / group, j = r % group;
          T* o = out + gv.q_offset + (i0 + i) * gv.q_stride + j * d;
          T* lse_r = lse + gv.lse_offset + j * shape.q_len + i0 + i;
          const T* acc_r = acc.data() + r * d;
          const bool visible = row_sum[r] > T(0);
          const T lse_b =
              visible ? row_max[r] + T(std::log(row_sum[r])) : neg_inf;
          const T inv_sum = visible ? T(1) / row_sum[r] : T(0);
          if (!accumulate || *lse_r == neg_inf) {  // running row empty
            for (int64_t c = 0; c < d; ++c) o[c] = acc_r[c] * inv_sum;
            *lse_r = lse_b;
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
  const T neg_inf = -std::numeric_limits<T>::infinity();
  const int64_t d = shape.head_dim;
  const int64_t group = shape.heads / shape.kv_heads;
  const int64_t tile_q =
      std::max<int64_t>(1, internal::kAttentionTileRows / group);
  const int64_t max_rows = tile_q * group;
  const T scale = T(1.0 / std::sqrt(double(d)));
  if (shape.q_len <= 0 || shape.kv_len <= 0) return;
  const std::vector<internal::PositionRange> k_ranges =
      internal::TileRanges(k_pos, shape.kv_len, kAttentionTileK);
  std::vector<T> qp(max_rows * d), dop(max_rows * d), dqp(max_rows * d);
  std::vector<T> p(max_rows * kAttentionTileK), ds(max_rows * kAttentionTileK);
  std::vector<T> row_dot(max_rows), row_lse(max_rows);  // D, lse

  for (int64_t b = 0; b < shape.batch; ++b) {
    for (int64_t g = 0; g < shape.kv_heads; ++g) {
      const internal::GroupView gv = internal::ViewOf(shape, b, g);
      for (int64_t i0 = 0; i0 < shape.q_len; i0 += tile_q) {
        const int64_t bq = std::min(tile_q, shape.q_len - i0);
        const int64_t rows = bq * group;
        const internal::PositionRange qr = internal::RangeOf(q_pos + i0, bq);
        const int64_t q_at = gv.q_offset + i0 * gv.q_stride;
        bool any_visible = false;
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t i = r / group, j = r % group;
          row_lse[r] = lse[gv.lse_offset + j * shape.q_len + i0 + i];
          any_visible = any_visible || row_lse[r] != neg_inf;
        }
        if (!any_visible) continue;
        internal::PackRows(q + q_at, gv, bq, qp.data());
        internal::PackRows(dout + q_at, gv, bq, dop.data());
        for (int64_t r = 0; r < rows; ++r) {
          const T* out_r =
              out + q_at + (r / group) * gv.q_stride + (r % group) * d;
          const T* dout_r = dop.data() + r * d;
          double dot = 0;
          for (int64_t c = 0; c < d; ++c) dot += double(dout_r[c]) * out_r[c];
          row_dot[r] = T(dot);
        }
        std::fill_n(dqp.begin(), rows * d, T(0));
        for (size_t kb = 0; kb < k_ranges.size(); ++kb) {
          const internal::PositionRange kr = k_ranges[kb];
          if (kr.min > qr.max) continue;
          const int64_t j0 = int64_t(kb) * kAttentionTileK;
          const int64_t bk = std::min(kAttentionTileK, shape.kv_len - j0);
          const int64_t kv_at = gv.kv_offset + j0 * gv.kv_stride;
          // p = exp(scale q k^T - lse), 0 where masked or lse = -inf.
          Gemm<T>(false, true, rows, bk, d, scale, qp.data(), d, k + kv_at,
                  gv.kv_stride, T(0), p.data(), bk);
          if (kr.max > qr.min) {
            internal::MaskFuture(q_pos + i0, bq, group, k_pos + j0, bk,
                                 p.data());
          }
          for (int64_t r = 0; r < rows; ++r) {
            T* pr = p.data() + r * bk;
            const T l = row_lse[r];
            if (l == neg_inf) {
              std::fill_n(pr, bk, T(0));
              continue;
            }
            ExpShifted(pr, bk, l, pr);
          }
          // dv += p^T dout
          Gemm<T>(true, false, bk, d, rows, T(1), p.data(), bk, dop.data(), d,
                  T(1), dv + kv_at, gv.kv_stride);
          // ds = p (dout v^T - D)
          Gemm<T>(false, true, rows, bk, d, T(1), dop.data(), d, v + kv_at,
                  gv.kv_stride, T(0), ds.data(), bk);
          for (int64_t r = 0; r < rows; ++r) {
            T* dsr = ds.data() + r * bk;
            const T* pr = p.data() + r * bk;
            const T dr = row_dot[r];
            for (int64_t c = 0; c < bk; ++c) dsr[c] = pr[c] * (dsr[c] - dr);
          }
          // dq += scale ds k; dk += scale ds^T q
          Gemm<T>(false, false, rows, d, bk, scale, ds.data(), bk, k + kv_at,
                  gv.kv_stride, T(1), dqp.data(), d);
          Gemm<T>(true, false, bk, d, rows, scale, ds.data(), bk, qp.data(), d,
                  T(1), dk + kv_at, gv.kv_stride);
        }
        for (int64_t i = 0; i < bq; ++i) {  // unpack-add the tile's dq rows
          T* dst = dq + q_at + i * gv.q_stride;
          const T* src = dqp.data() + i * gv.row_width;
          for (int64_t c = 0; c < gv.row_width; ++c) dst[c] += src[c];
        }
      }
    }
  }
}

}  // namespace tessera::executor::cpu
