// Causal grouped-query attention on the GPU in backend.h's block form (for
// ring attention): a flash-style kernel pair on the tensor cores (WMMA, bf16
// operands, f32 accumulation; Dao et al. 2022, FlashAttention-2's loop order
// in the backward) that never stores the s x s matrix. Layouts and tile sizes
// are in attention_layout.h.
//
// Forward: one block per (64 query rows, query head, batch row). For each
// 64-key tile that is not entirely in the future of every query of the
// block: S = Q K^T (WMMA, f32), mask by positions (query i sees key j iff
// k_pos[j] <= q_pos[i]), online softmax (Milakov & Gimelshein 2018) in the
// log2 domain with exp2f, P (bf16), O = O * alpha + P V (WMMA; O in shared
// memory, f32). Then out = O / l and lse = m + log(l), written, or merged
// into the running (out, lse) when accumulating; rows that see no key are
// empty (lse -inf, out 0).
//
// Backward: one block per (64-key tile, kv head, batch row), over the query
// heads of the group and 32-row query tiles: P = exp(scale S - lse) from the
// final lse, dP = dO V^T, dS = P (dP - D) with D = rowsum(dO * O) (computed
// first by AttentionDeltaKernel), dV += P^T dO and dK += dS^T Q in shared
// memory (the block owns its keys), dQ += scale dS K through atomicAdd.
// dq, dk, dv are f32 and are added into.
//
// Correctness first: fragments go through shared memory (WMMA's register
// layout is opaque), which costs shared-memory bandwidth; a register-resident
// mma.sync version (FlashAttention-2's) is the next step for speed.
//
// defines: AttentionParams, LoadTile, AttentionForwardKernel,
//          AttentionDeltaKernel, AttentionBackwardKernel,
//          LaunchAttentionForward, LaunchAttentionBackward
//
//   AttentionParams p = ...;  // pointers, shape, scale = 1/sqrt(head_dim)
//   LaunchAttentionForward<bf16>(p, /*accumulate=*/false, out, stream);
#pragma once

#include <cuda_runtime.h>
#include <mma.h>

#include <climits>
#include <cstdint>

#include "executor/cuda/attention_layout.h"
#include "executor/cuda/device_utils.cuh"
#include "executor/cuda/launch_config.h"

namespace tessera::executor::cuda {

struct AttentionParams {
  const bf16* q = nullptr;         // [batch, q_len, heads, D]
  const bf16* k = nullptr;         // [batch, kv_len, kv_heads, D]
  const bf16* v = nullptr;         // [batch, kv_len, kv_heads, D]
  const int32_t* q_pos = nullptr;  // [q_len]
  const int32_t* k_pos = nullptr;  // [kv_len]
  float* lse = nullptr;            // [batch, heads, q_len]
  int64_t batch = 0, q_len = 0, kv_len = 0, heads = 0, kv_heads = 0;
  int64_t group = 1;   // heads / kv_heads
  float scale = 1.0f;  // 1 / sqrt(D)
  // Backward only.
  const bf16* dout = nullptr;    // [batch, q_len, heads, D]
  const float* delta = nullptr;  // [batch, heads, q_len], rowsum(dO * O)
  float* dq = nullptr;           // f32, like q
  float* dk = nullptr;           // f32, like k
  float* dv = nullptr;           // f32, like v
};

namespace attention_internal {

using namespace nvcuda;
using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major>;
using FragACol =
    wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::col_major>;
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major>;
using FragBCol =
    wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

}  // namespace attention_internal

// Copies `rows` rows of D bf16 from `src` (row r at src + r * stride) into
// shared memory (row r at dst + r * ld); rows at or past `valid` are zeros.
// 16-byte copies when src allows it. Called by the whole block.
template <int D>
__device__ __forceinline__ void LoadTile(bf16* dst, int ld, const bf16* src,
                                         int64_t stride, int rows, int valid) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  const bool vectorized =
      (reinterpret_cast<uintptr_t>(src) & 15) == 0 && stride % 8 == 0;
  for (int idx = threadIdx.x; idx < rows * kChunks; idx += blockDim.x) {
    const int r = idx / kChunks, c = (idx % kChunks) * 8;
    uint4 value = make_uint4(0, 0, 0, 0);
    if (r < valid) {
      const bf16* s = src + r * stride + c;
      if (vectorized) {
        value = *reinterpret_cast<const uint4*>(s);
      } else {
        bf16 parts[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) parts[j] = s[j];
        memcpy(&value, parts, sizeof(value));
      }
    }
    *reinterpret_cast<uint4*>(dst + r * ld + c) = value;
  }
}

template <int D, typename OutT>
__global__ void __launch_bounds__(kAttentionThreads)
    AttentionForwardKernel(AttentionParams p, bool accumulate, OutT* out) {
  using namespace attention_internal;
  using L = AttentionForwardLayout<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  bf16* q_s = reinterpret_cast<bf16*>(smem + L::kQ);
  bf16* k_s = reinterpret_cast<bf16*>(smem + L::kK);
  bf16* v_s = reinterpret_cast<bf16*>(smem + L::kV);
  float* s_s = reinterpret_cast<float*>(smem + L::kS);
  bf16* p_s = reinterpret_cast<bf16*>(smem + L::kP);
  float* o_s = reinterpret_cast<float*>(smem + L::kO);
  float* row_max = reinterpret_cast<float*>(smem + L::kRowMax);
  float* row_sum = reinterpret_cast<float*>(smem + L::kRowSum);
  float* row_scale = reinterpret_cast<float*>(smem + L::kRowScale);
  int32_t* q_pos_s = reinterpret_cast<int32_t*>(smem + L::kQPos);
  int32_t* k_pos_s = reinterpret_cast<int32_t*>(smem + L::kKPos);

  const int64_t b = blockIdx.z, h = blockIdx.y;
  const int64_t g = h / p.group;
  const int64_t i0 = static_cast<int64_t>(blockIdx.x) * L::kRows;
  const int valid_q = static_cast<int>(
      p.q_len - i0 < L::kRows ? p.q_len - i0 : int64_t{L::kRows});
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int r0 = warp * 16;  // the warp's query rows
  const float scale_log2 = p.scale * kLog2e;

  LoadTile<D>(q_s, L::kLdQkv, p.q + ((b * p.q_len + i0) * p.heads + h) * D,
              p.heads * D, L::kRows, valid_q);
  for (int r = threadIdx.x; r < L::kRows; r += blockDim.x) {
    q_pos_s[r] = r < valid_q ? p.q_pos[i0 + r] : INT_MIN;
    row_max[r] = NegInf();
    row_sum[r] = 0.0f;
  }
  for (int idx = threadIdx.x; idx < L::kRows * L::kLdO; idx += blockDim.x) {
    o_s[idx] = 0.0f;
  }
  __syncthreads();
  // The block's latest query position (every warp computes the same).
  int q_max = INT_MIN;
  for (int r = lane; r < L::kRows; r += 32) q_max = max(q_max, q_pos_s[r]);
  q_max = __reduce_max_sync(0xffffffffu, q_max);

  for (int64_t j0 = 0; j0 < p.kv_len; j0 += L::kKeys) {
    const int valid_k = static_cast<int>(
        p.kv_len - j0 < L::kKeys ? p.kv_len - j0 : int64_t{L::kKeys});
    // Skip a tile whose every key is in every query's future (uniform: every
    // warp reduces the same positions).
    int k_min = INT_MAX;
    for (int c = lane; c < valid_k; c += 32)
      k_min = min(k_min, p.k_pos[j0 + c]);
    k_min = __reduce_min_sync(0xffffffffu, k_min);
    if (k_min > q_max) continue;

    __syncthreads();  // every warp is done with the previous tile
    const int64_t kv_at = ((b * p.kv_len + j0) * p.kv_heads + g) * D;
    LoadTile<D>(k_s, L::kLdQkv, p.k + kv_at, p.kv_heads * D, L::kKeys, valid_k);
    LoadTile<D>(v_s, L::kLdQkv, p.v + kv_at, p.kv_heads * D, L::kKeys, valid_k);
    for (int c = threadIdx.x; c < L::kKeys; c += blockDim.x) {
      k_pos_s[c] = c < valid_k ? p.k_pos[j0 + c] : INT_MAX;
    }
    __syncthreads();

    // S = Q K^T for the warp's 16 rows x 64 keys.
    {
      FragC acc[L::kKeys / 16];
#pragma unroll
      for (int j = 0; j < L::kKeys / 16; ++j) wmma::fill_fragment(acc[j], 0.0f);
#pragma unroll
      for (int kk = 0; kk < D; kk += 16) {
        FragA a;
        wmma::load_matrix_sync(a, q_s + r0 * L::kLdQkv + kk, L::kLdQkv);
#pragma unroll
        for (int j = 0; j < L::kKeys / 16; ++j) {
          FragBCol kt;  // K^T: element (kk', n) at k_s + n * ld + kk'
          wmma::load_matrix_sync(kt, k_s + (16 * j) * L::kLdQkv + kk,
                                 L::kLdQkv);
          wmma::mma_sync(acc[j], a, kt, acc[j]);
        }
      }
#pragma unroll
      for (int j = 0; j < L::kKeys / 16; ++j) {
        wmma::store_matrix_sync(s_s + r0 * L::kLdS + 16 * j, acc[j], L::kLdS,
                                wmma::mem_row_major);
      }
    }
    __syncwarp();

    // Online softmax of the warp's rows; lane covers keys lane and lane + 32.
    for (int rr = 0; rr < 16; ++rr) {
      const int r = r0 + rr;
      const int qp = q_pos_s[r];
      const bool vis0 = k_pos_s[lane] <= qp;
      const bool vis1 = k_pos_s[lane + 32] <= qp;
      const float x0 = vis0 ? s_s[r * L::kLdS + lane] * scale_log2 : NegInf();
      const float x1 =
          vis1 ? s_s[r * L::kLdS + lane + 32] * scale_log2 : NegInf();
      const float m_old = row_max[r];
      const float m_new = fmaxf(m_old, WarpMax(fmaxf(x0, x1)));
      float p0 = 0.0f, p1 = 0.0f, alpha = 1.0f;
      if (m_new != NegInf()) {  // else: no key visible yet, the row stays empty
        alpha = exp2f(m_old - m_new);  // 0 when m_old is -inf
        p0 = vis0 ? exp2f(x0 - m_new) : 0.0f;
        p1 = vis1 ? exp2f(x1 - m_new) : 0.0f;
      }
      const float tile_sum = WarpSum(p0 + p1);
      p_s[r * L::kLdP + lane] = FromFloat<bf16>(p0);
      p_s[r * L::kLdP + lane + 32] = FromFloat<bf16>(p1);
      __syncwarp();  // every lane has read row_max[r]
      if (lane == 0) {
        row_max[r] = m_new;
        row_sum[r] = row_sum[r] * alpha + tile_sum;
        row_scale[r] = alpha;
      }
    }
    __syncwarp();
    for (int idx = lane; idx < 16 * D; idx += 32) {  // O rows *= alpha
      const int r = r0 + idx / D, c = idx % D;
      o_s[r * L::kLdO + c] *= row_scale[r];
    }
    __syncwarp();

    // O += P V for the warp's rows.
#pragma unroll
    for (int c = 0; c < D; c += 16) {
      FragC acc;
      wmma::load_matrix_sync(acc, o_s + r0 * L::kLdO + c, L::kLdO,
                             wmma::mem_row_major);
#pragma unroll
      for (int kk = 0; kk < L::kKeys; kk += 16) {
        FragA pa;
        FragB vb;
        wmma::load_matrix_sync(pa, p_s + r0 * L::kLdP + kk, L::kLdP);
        wmma::load_matrix_sync(vb, v_s + kk * L::kLdQkv + c, L::kLdQkv);
        wmma::mma_sync(acc, pa, vb, acc);
      }
      wmma::store_matrix_sync(o_s + r0 * L::kLdO + c, acc, L::kLdO,
                              wmma::mem_row_major);
    }
    __syncwarp();
  }

  // Write the warp's rows, or merge them into the running (out, lse).
  for (int rr = 0; rr < 16; ++rr) {
    const int r = r0 + rr;
    if (r >= valid_q) break;
    const int64_t qi = i0 + r;
    float* lse_at = p.lse + (b * p.heads + h) * p.q_len + qi;
    OutT* o = out + ((b * p.q_len + qi) * p.heads + h) * D;
    const float* acc = o_s + r * L::kLdO;
    const float sum = row_sum[r];
    const bool visible = sum > 0.0f;
    const float lse_b = visible ? row_max[r] * kLn2 + logf(sum) : NegInf();
    const float inv_sum = visible ? 1.0f / sum : 0.0f;
    const float lse_old = accumulate ? *lse_at : NegInf();
    __syncwarp();  // every lane has read lse before lane 0 writes it
    if (lse_old == NegInf()) {  // a fresh row, or a running row still empty
      for (int c = lane; c < D; c += 32) {
        o[c] = FromFloat<OutT>(acc[c] * inv_sum);
      }
      if (lane == 0) *lse_at = lse_b;
    } else if (visible) {
      const float lse_new =
          fmaxf(lse_old, lse_b) + log1pf(expf(-fabsf(lse_old - lse_b)));
      const float w_old = expf(lse_old - lse_new);
      const float w_b = expf(lse_b - lse_new) * inv_sum;
      for (int c = lane; c < D; c += 32) {
        o[c] = FromFloat<OutT>(ToFloat(o[c]) * w_old + acc[c] * w_b);
      }
      if (lane == 0) *lse_at = lse_new;
    }
    __syncwarp();
  }
}

// delta[(b * heads + h) * q_len + i] = sum_c dout[b,i,h,c] * out[b,i,h,c], one
// thread per (b, i, h).
template <typename OutT>
__global__ void AttentionDeltaKernel(const bf16* dout, const OutT* out,
                                     int64_t batch, int64_t q_len,
                                     int64_t heads, int64_t head_dim,
                                     float* delta) {
  for (int64_t row = GridIndex(); row < batch * q_len * heads;
       row += GridStride()) {
    const int64_t h = row % heads, i = (row / heads) % q_len,
                  b = row / (heads * q_len);
    const bf16* d = dout + row * head_dim;
    const OutT* o = out + row * head_dim;
    float dot = 0.0f;
    for (int64_t c = 0; c < head_dim; ++c) dot += ToFloat(d[c]) * ToFloat(o[c]);
    delta[(b * heads + h) * q_len + i] = dot;
  }
}

template <int D>
__global__ void __launch_bounds__(kAttentionThreads)
    AttentionBackwardKernel(AttentionParams p) {
  using namespace attention_internal;
  using L = AttentionBackwardLayout<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  bf16* k_s = reinterpret_cast<bf16*>(smem + L::kK);
  bf16* v_s = reinterpret_cast<bf16*>(smem + L::kV);
  bf16* q_s = reinterpret_cast<bf16*>(smem + L::kQ);
  bf16* do_s = reinterpret_cast<bf16*>(smem + L::kDO);
  float* dk_s = reinterpret_cast<float*>(smem + L::kDK);
  float* dv_s = reinterpret_cast<float*>(smem + L::kDV);
  float* s_s = reinterpret_cast<float*>(smem + L::kS);
  float* dp_s = reinterpret_cast<float*>(smem + L::kDP);
  float* dq_s = reinterpret_cast<float*>(smem + L::kDQ);
  bf16* p_s = reinterpret_cast<bf16*>(smem + L::kP);
  bf16* ds_s = reinterpret_cast<bf16*>(smem + L::kDS);
  float* lse_s = reinterpret_cast<float*>(smem + L::kLse);
  float* delta_s = reinterpret_cast<float*>(smem + L::kDelta);
  int32_t* q_pos_s = reinterpret_cast<int32_t*>(smem + L::kQPos);
  int32_t* k_pos_s = reinterpret_cast<int32_t*>(smem + L::kKPos);

  const int64_t b = blockIdx.z, g = blockIdx.y;
  const int64_t j0 = static_cast<int64_t>(blockIdx.x) * L::kKeys;
  const int valid_k = static_cast<int>(
      p.kv_len - j0 < L::kKeys ? p.kv_len - j0 : int64_t{L::kKeys});
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t kv_at = ((b * p.kv_len + j0) * p.kv_heads + g) * D;

  LoadTile<D>(k_s, L::kLdQkv, p.k + kv_at, p.kv_heads * D, L::kKeys, valid_k);
  LoadTile<D>(v_s, L::kLdQkv, p.v + kv_at, p.kv_heads * D, L::kKeys, valid_k);
  for (int c = threadIdx.x; c < L::kKeys; c += blockDim.x) {
    k_pos_s[c] = c < valid_k ? p.k_pos[j0 + c] : INT_MAX;
  }
  for (int idx = threadIdx.x; idx < L::kKeys * L::kLdAcc; idx += blockDim.x) {
    dk_s[idx] = 0.0f;
    dv_s[idx] = 0.0f;
  }
  __syncthreads();
  int k_min = INT_MAX;  // the block's earliest key (every warp the same)
  for (int c = lane; c < L::kKeys; c += 32) k_min = min(k_min, k_pos_s[c]);
  k_min = __reduce_min_sync(0xffffffffu, k_min);

  for (int64_t hh = 0; hh < p.group; ++hh) {
    const int64_t h = g * p.group + hh;
    for (int64_t i0 = 0; i0 < p.q_len; i0 += L::kRows) {
      const int valid_q = static_cast<int>(
          p.q_len - i0 < L::kRows ? p.q_len - i0 : int64_t{L::kRows});
      // Skip a tile whose every query precedes every key of the block.
      int q_max = INT_MIN;
      for (int r = lane; r < valid_q; r += 32) {
        q_max = max(q_max, p.q_pos[i0 + r]);
      }
      q_max = __reduce_max_sync(0xffffffffu, q_max);
      if (q_max < k_min) continue;

      const int64_t q_at = ((b * p.q_len + i0) * p.heads + h) * D;
      LoadTile<D>(q_s, L::kLdQkv, p.q + q_at, p.heads * D, L::kRows, valid_q);
      LoadTile<D>(do_s, L::kLdQkv, p.dout + q_at, p.heads * D, L::kRows,
                  valid_q);
      for (int r = threadIdx.x; r < L::kRows; r += blockDim.x) {
        const bool ok = r < valid_q;
        const int64_t at = (b * p.heads + h) * p.q_len + i0 + r;
        lse_s[r] = ok ? p.lse[at] : NegInf();
        delta_s[r] = ok ? p.delta[at] : 0.0f;
        q_pos_s[r] = ok ? p.q_pos[i0 + r] : INT_MIN;
      }
      __syncthreads();

      // S = Q K^T and dP = dO V^T: warp w takes row strip (w & 1) and the
      // column strips 2 (w >> 1) and 2 (w >> 1) + 1.
      {
        const int rs = (warp & 1) * 16;
        const int cs = (warp >> 1) * 32;
        FragC acc_s[2], acc_dp[2];
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          wmma::fill_fragment(acc_s[j], 0.0f);
          wmma::fill_fragment(acc_dp[j], 0.0f);
        }
#pragma unroll
        for (int kk = 0; kk < D; kk += 16) {
          FragA qa, doa;
          wmma::load_matrix_sync(qa, q_s + rs * L::kLdQkv + kk, L::kLdQkv);
          wmma::load_matrix_sync(doa, do_s + rs * L::kLdQkv + kk, L::kLdQkv);
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            FragBCol kt, vt;
            wmma::load_matrix_sync(kt, k_s + (cs + 16 * j) * L::kLdQkv + kk,
                                   L::kLdQkv);
            wmma::load_matrix_sync(vt, v_s + (cs + 16 * j) * L::kLdQkv + kk,
                                   L::kLdQkv);
            wmma::mma_sync(acc_s[j], qa, kt, acc_s[j]);
            wmma::mma_sync(acc_dp[j], doa, vt, acc_dp[j]);
          }
        }
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          wmma::store_matrix_sync(s_s + rs * L::kLdS + cs + 16 * j, acc_s[j],
                                  L::kLdS, wmma::mem_row_major);
          wmma::store_matrix_sync(dp_s + rs * L::kLdS + cs + 16 * j, acc_dp[j],
                                  L::kLdS, wmma::mem_row_major);
        }
      }
      __syncthreads();

      // P = exp(scale S - lse) where visible, dS = P (dP - D).
      for (int idx = threadIdx.x; idx < L::kRows * L::kKeys;
           idx += blockDim.x) {
        const int r = idx / L::kKeys, c = idx % L::kKeys;
        const float lse_r = lse_s[r];
        const bool visible = k_pos_s[c] <= q_pos_s[r] && lse_r != NegInf();
        const float pr =
            visible ? expf(s_s[r * L::kLdS + c] * p.scale - lse_r) : 0.0f;
        const float ds = pr * (dp_s[r * L::kLdS + c] - delta_s[r]);
        p_s[r * L::kLdP + c] = FromFloat<bf16>(pr);
        ds_s[r * L::kLdP + c] = FromFloat<bf16>(ds);
      }
      __syncthreads();

      // dV += P^T dO and dK += dS^T Q: warp w owns key rows [16w, 16w + 16).
      {
        const int kr = warp * 16;
#pragma unroll
        for (int c = 0; c < D; c += 16) {
          FragC acc_dv, acc_dk;
          wmma::load_matrix_sync(acc_dv, dv_s + kr * L::kLdAcc + c, L::kLdAcc,
                                 wmma::mem_row_major);
          wmma::load_matrix_sync(acc_dk, dk_s + kr * L::kLdAcc + c, L::kLdAcc,
                                 wmma::mem_row_major);
#pragma unroll
          for (int kk = 0; kk < L::kRows; kk += 16) {
            // P^T: element (key m, row kk') at p_s + kk' * ld + m.
            FragACol pt, dst;
            wmma::load_matrix_sync(pt, p_s + kk * L::kLdP + kr, L::kLdP);
            wmma::load_matrix_sync(dst, ds_s + kk * L::kLdP + kr, L::kLdP);
            FragB dob, qb;
            wmma::load_matrix_sync(dob, do_s + kk * L::kLdQkv + c, L::kLdQkv);
            wmma::load_matrix_sync(qb, q_s + kk * L::kLdQkv + c, L::kLdQkv);
            wmma::mma_sync(acc_dv, pt, dob, acc_dv);
            wmma::mma_sync(acc_dk, dst, qb, acc_dk);
          }
          wmma::store_matrix_sync(dv_s + kr * L::kLdAcc + c, acc_dv, L::kLdAcc,
                                  wmma::mem_row_major);
          wmma::store_matrix_sync(dk_s + kr * L::kLdAcc + c, acc_dk, L::kLdAcc,
                                  wmma::mem_row_major);
        }
      }

      // dQ of the tile = dS K, into the S/dP region (free since the P pass):
      // warp w takes row strip (w & 1) and every other column strip.
      {
        const int rs = (warp & 1) * 16;
        for (int c = (warp >> 1) * 16; c < D; c += 32) {
          FragC acc;
          wmma::fill_fragment(acc, 0.0f);
#pragma unroll
          for (int kk = 0; kk < L::kKeys; kk += 16) {
            FragA dsa;
            FragB kb;
            wmma::load_matrix_sync(dsa, ds_s + rs * L::kLdP + kk, L::kLdP);
            wmma::load_matrix_sync(kb, k_s + kk * L::kLdQkv + c, L::kLdQkv);
            wmma::mma_sync(acc, dsa, kb, acc);
          }
          wmma::store_matrix_sync(dq_s + rs * L::kLdAcc + c, acc, L::kLdAcc,
                                  wmma::mem_row_major);
        }
      }
      __syncthreads();
      for (int idx = threadIdx.x; idx < valid_q * D; idx += blockDim.x) {
        const int r = idx / D, c = idx % D;
        atomicAdd(p.dq + q_at + static_cast<int64_t>(r) * p.heads * D + c,
                  p.scale * dq_s[r * L::kLdAcc + c]);
      }
      __syncthreads();  // the next tile overwrites Q, dO, S, P and dQ
    }
  }

  // The block owns its keys: dk += scale dK, dv += dV.
  for (int idx = threadIdx.x; idx < valid_k * D; idx += blockDim.x) {
    const int r = idx / D, c = idx % D;
    const int64_t at = kv_at + static_cast<int64_t>(r) * p.kv_heads * D + c;
    p.dk[at] += p.scale * dk_s[r * L::kLdAcc + c];
    p.dv[at] += dv_s[r * L::kLdAcc + c];
  }
}

namespace attention_internal {

template <typename Kernel>
cudaError_t AllowSharedMemory(Kernel kernel, size_t bytes) {
  return cudaFuncSetAttribute(kernel,
                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(bytes));
}

template <int D, typename OutT>
cudaError_t LaunchForward(const AttentionParams& p, bool accumulate, OutT* out,
                          cudaStream_t stream) {
  using L = AttentionForwardLayout<D>;
  auto kernel = AttentionForwardKernel<D, OutT>;
  if (cudaError_t e = AllowSharedMemory(kernel, L::kBytes); e != cudaSuccess) {
    return e;
  }
  const dim3 grid(static_cast<unsigned>((p.q_len + L::kRows - 1) / L::kRows),
                  static_cast<unsigned>(p.heads),
                  static_cast<unsigned>(p.batch));
  kernel<<<grid, kAttentionThreads, L::kBytes, stream>>>(p, accumulate, out);
  return cudaGetLastError();
}

template <int D>
cudaError_t LaunchBackward(const AttentionParams& p, cudaStream_t stream) {
  using L = AttentionBackwardLayout<D>;
  auto kernel = AttentionBackwardKernel<D>;
  if (cudaError_t e = AllowSharedMemory(kernel, L::kBytes); e != cudaSuccess) {
    return e;
  }
  const dim3 grid(static_cast<unsigned>((p.kv_len + L::kKeys - 1) / L::kKeys),
                  static_cast<unsigned>(p.kv_heads),
                  static_cast<unsigned>(p.batch));
  kernel<<<grid, kAttentionThreads, L::kBytes, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace attention_internal

// Forward into out (bf16 or f32) and p.lse. head_dim must satisfy
// AttentionHeadDimSupported (cudaErrorInvalidValue otherwise).
template <typename OutT>
cudaError_t LaunchAttentionForward(const AttentionParams& p, int head_dim,
                                   bool accumulate, OutT* out,
                                   cudaStream_t stream) {
  using attention_internal::LaunchForward;
  if (p.q_len <= 0 || p.batch <= 0 || p.heads <= 0) return cudaSuccess;
  switch (head_dim) {
    case 16:
      return LaunchForward<16, OutT>(p, accumulate, out, stream);
    case 32:
      return LaunchForward<32, OutT>(p, accumulate, out, stream);
    case 64:
      return LaunchForward<64, OutT>(p, accumulate, out, stream);
    case 80:
      return LaunchForward<80, OutT>(p, accumulate, out, stream);
    case 96:
      return LaunchForward<96, OutT>(p, accumulate, out, stream);
    case 128:
      return LaunchForward<128, OutT>(p, accumulate, out, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

// Backward: computes p.delta from dout and out first (p.delta must point at
// batch * heads * q_len floats of scratch), then adds into dq, dk, dv.
template <typename OutT>
cudaError_t LaunchAttentionBackward(AttentionParams p, int head_dim,
                                    const OutT* out, float* delta_scratch,
                                    cudaStream_t stream) {
  using attention_internal::LaunchBackward;
  if (p.q_len <= 0 || p.kv_len <= 0 || p.batch <= 0) return cudaSuccess;
  const Launch l = ElementwiseLaunch(p.batch * p.q_len * p.heads);
  AttentionDeltaKernel<OutT><<<l.blocks, l.threads, 0, stream>>>(
      p.dout, out, p.batch, p.q_len, p.heads, head_dim, delta_scratch);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  p.delta = delta_scratch;
  switch (head_dim) {
    case 16:
      return LaunchBackward<16>(p, stream);
    case 32:
      return LaunchBackward<32>(p, stream);
    case 64:
      return LaunchBackward<64>(p, stream);
    case 80:
      return LaunchBackward<80>(p, stream);
    case 96:
      return LaunchBackward<96>(p, stream);
    case 128:
      return LaunchBackward<128>(p, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace tessera::executor::cuda
