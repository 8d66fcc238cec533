#include "executor/cpu/cpu_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "core/usable_cpus.h"
#include "executor/cpu/adamw.h"
#include "executor/cpu/attention.h"
#include "executor/cpu/cross_entropy.h"
#include "executor/cpu/embedding.h"
#include "executor/cpu/gemm.h"
#include "executor/cpu/rmsnorm.h"
#include "executor/cpu/rope.h"
#include "executor/cpu/swiglu.h"

namespace tessera::executor {
namespace {

constexpr size_t kAlignmentBytes = 64;  // a cache line; AVX-512 loads

// ---- BLAS threads: one process-wide setting shared by every backend ------

absl::Mutex g_blas_policy_mu;
int g_live_backends ABSL_GUARDED_BY(g_blas_policy_mu) = 0;

void ApplyBlasThreads(int requested)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(g_blas_policy_mu) {
  if (requested > 0) {
    cpu::SetBlasThreads(requested);
    return;
  }
  const int hardware = UsableCpuCount();
  cpu::SetBlasThreads(std::max(1, hardware / std::max(1, g_live_backends)));
}

// ---- Argument checks: misuse is a caller bug, reported and fatal ---------

BackendCheckOptions CpuChecks() {
  return {.backend = "CpuBackend",
          .act = DType::kF32,
          .held = {DType::kF32, DType::kI32},
          .unheld_note =
              "bf16 is the CUDA backend's compute dtype; the cpu "
              "backend computes in f32"};
}

float* F32(const Tensor& t) { return t.data_as<float>(); }
const int32_t* I32(const Tensor& t) { return t.data_as<const int32_t>(); }

}  // namespace

CpuBackend::CpuBackend(CpuBackendOptions options)
    : blas_threads_(options.blas_threads),
      checks_(CpuChecks()),
      meter_("cpu backend", options.memory_limit_bytes) {
  absl::MutexLock lock(&g_blas_policy_mu);
  ++g_live_backends;
  ApplyBlasThreads(blas_threads_);
}

CpuBackend::~CpuBackend() {
  absl::MutexLock lock(&g_blas_policy_mu);
  --g_live_backends;
  if (blas_threads_ == 0 && g_live_backends > 0) ApplyBlasThreads(0);
}

// ---- Memory -------------------------------------------------------------

absl::StatusOr<DeviceBuffer> CpuBackend::Allocate(int64_t numel, DType dtype,
                                                  absl::string_view what) {
  if (dtype == DType::kBF16) {
    return meter_.AllocationError(
        absl::StatusCode::kInvalidArgument, what,
        "bf16 is not supported (the cpu backend computes in f32; bf16 is the "
        "CUDA backend's compute dtype)");
  }
  const MemoryRequest request{what, numel, dtype};
  TESSERA_ASSIGN_OR_RETURN(const int64_t bytes,
                           meter_.BytesFor(request, /*slack_elements=*/64));
  if (numel == 0) return DeviceBuffer(this, Tensor{nullptr, dtype, 0});
  TESSERA_ASSIGN_OR_RETURN(const int64_t in_use_before,
                           meter_.Reserve(request));
  const size_t rounded = (static_cast<size_t>(bytes) + kAlignmentBytes - 1) /
                         kAlignmentBytes * kAlignmentBytes;
  void* data = std::aligned_alloc(kAlignmentBytes, rounded);
  if (data == nullptr) {
    meter_.Release(bytes);
    return meter_.OutOfMemory(request, "host", in_use_before, "");
  }
  std::memset(data, 0, static_cast<size_t>(bytes));
  return DeviceBuffer(this, Tensor{data, dtype, numel});
}

void CpuBackend::Free(const Tensor& view) {
  std::free(view.data);
  meter_.Release(static_cast<int64_t>(view.bytes()));
}

void CpuBackend::CopyToHost(const Tensor& src, void* host) {
  if (src.bytes() > 0) std::memcpy(host, src.data, src.bytes());
}

void CpuBackend::CopyFromHost(const void* host, const Tensor& dst) {
  if (dst.bytes() > 0) std::memcpy(dst.data, host, dst.bytes());
}

// ---- Elementwise --------------------------------------------------------

void CpuBackend::Copy(const Tensor& src, const Tensor& dst, int64_t n) {
  checks_.Copy(src, dst, n);
  if (src.dtype == dst.dtype) {
    if (n > 0) std::memmove(dst.data, src.data, n * DTypeSize(src.dtype));
  } else if (src.dtype == DType::kBF16) {
    const uint16_t* s = src.data_as<const uint16_t>();
    for (int64_t i = 0; i < n; ++i) F32(dst)[i] = Bf16ToFloat(s[i]);
  } else {
    uint16_t* d = dst.data_as<uint16_t>();
    for (int64_t i = 0; i < n; ++i) d[i] = FloatToBf16(F32(src)[i]);
  }
}

void CpuBackend::Fill(const Tensor& dst, int64_t n, float value) {
  checks_.Fill(dst, n);
  std::fill_n(F32(dst), n, value);
}

void CpuBackend::Add(const Tensor& a, const Tensor& b, const Tensor& out,
                     int64_t n) {
  checks_.Add(a, b, out, n);
  const float* pa = F32(a);
  const float* pb = F32(b);
  float* po = F32(out);
  for (int64_t i = 0; i < n; ++i) po[i] = pa[i] + pb[i];
}

void CpuBackend::Scale(const Tensor& x, int64_t n, float alpha) {
  checks_.Scale(x, n);
  float* p = F32(x);
  for (int64_t i = 0; i < n; ++i) p[i] *= alpha;
}

double CpuBackend::SumSquares(const Tensor& x, int64_t n) {
  checks_.SumSquares(x, n);
  const float* p = F32(x);
  double lanes[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int l = 0; l < 4; ++l) lanes[l] += double(p[i + l]) * p[i + l];
  }
  double sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; i < n; ++i) sum += double(p[i]) * p[i];
  return sum;
}

// ---- GEMM ---------------------------------------------------------------

void CpuBackend::Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n,
                      int64_t k, float alpha, const Tensor& a, const Tensor& b,
                      float beta, const Tensor& c) {
  checks_.Gemm(m, n, k, a, b, c);
  cpu::Gemm<float>(trans_a, trans_b, m, n, k, alpha, F32(a), trans_a ? m : k,
                   F32(b), trans_b ? k : n, beta, F32(c), n);
}

// ---- Layers -------------------------------------------------------------

void CpuBackend::RmsNormForward(const Tensor& x, const Tensor& weight,
                                int64_t rows, int64_t cols, float eps,
                                const Tensor& y, const Tensor& rstd) {
  checks_.RmsNormForward(x, weight, rows, cols, y, rstd);
  cpu::RmsNormForward<float>(F32(x), F32(weight), rows, cols, eps, F32(y),
                             F32(rstd));
}

void CpuBackend::RmsNormBackward(const Tensor& dy, const Tensor& x,
                                 const Tensor& weight, const Tensor& rstd,
                                 int64_t rows, int64_t cols, const Tensor& dx,
                                 const Tensor& dweight) {
  checks_.RmsNormBackward(dy, x, weight, rstd, rows, cols, dx, dweight);
  cpu::RmsNormBackward<float>(F32(dy), F32(x), F32(weight), F32(rstd), rows,
                              cols, F32(dx), F32(dweight));
}

void CpuBackend::EmbeddingForward(const Tensor& tokens, const Tensor& table,
                                  int64_t n_tokens, int64_t vocab_begin,
                                  int64_t vocab_rows, int64_t hidden,
                                  const Tensor& out) {
  checks_.EmbeddingForward(tokens, table, n_tokens, vocab_begin, vocab_rows,
                           hidden, out);
  cpu::EmbeddingForward<float>(I32(tokens), F32(table), n_tokens, vocab_begin,
                               vocab_rows, hidden, F32(out));
}

void CpuBackend::EmbeddingBackward(const Tensor& tokens, const Tensor& dout,
                                   int64_t n_tokens, int64_t vocab_begin,
                                   int64_t vocab_rows, int64_t hidden,
                                   const Tensor& dtable) {
  checks_.EmbeddingBackward(tokens, dout, n_tokens, vocab_begin, vocab_rows,
                            hidden, dtable);
  cpu::EmbeddingBackward<float>(I32(tokens), F32(dout), n_tokens, vocab_begin,
                                vocab_rows, hidden, F32(dtable));
}

void CpuBackend::RopeQkvForward(const Tensor& qkv, const Tensor& positions,
                                int64_t tokens, int64_t heads, int64_t kv_heads,
                                int64_t head_dim, float theta, const Tensor& q,
                                const Tensor& k, const Tensor& v) {
  checks_.RopeQkvForward(qkv, positions, tokens, heads, kv_heads, head_dim, q,
                         k, v);
  cpu::RopeQkvForward<float>(F32(qkv), I32(positions), tokens, heads, kv_heads,
                             head_dim, theta, F32(q), F32(k), F32(v));
}

void CpuBackend::RopeQkvBackward(const Tensor& dq, const Tensor& dk,
                                 const Tensor& dv, const Tensor& positions,
                                 int64_t tokens, int64_t heads,
                                 int64_t kv_heads, int64_t head_dim,
                                 float theta, const Tensor& dqkv) {
  checks_.RopeQkvBackward(dq, dk, dv, positions, tokens, heads, kv_heads,
                          head_dim, dqkv);
  cpu::RopeQkvBackward<float>(F32(dq), F32(dk), F32(dv), I32(positions), tokens,
                              heads, kv_heads, head_dim, theta, F32(dqkv));
}

void CpuBackend::AttentionForward(const AttentionShape& shape, const Tensor& q,
                                  const Tensor& k, const Tensor& v,
                                  const Tensor& q_pos, const Tensor& k_pos,
                                  bool accumulate, const Tensor& out,
                                  const Tensor& lse) {
  checks_.Attention("AttentionForward", shape);
  checks_.AttentionForward(shape, q, k, v, q_pos, k_pos, out, lse);
  cpu::AttentionForward<float>(shape, F32(q), F32(k), F32(v), I32(q_pos),
                               I32(k_pos), accumulate, F32(out), F32(lse));
}

void CpuBackend::AttentionBackward(const AttentionShape& shape,
                                   const Tensor& dout, const Tensor& q,
                                   const Tensor& k, const Tensor& v,
                                   const Tensor& out, const Tensor& lse,
                                   const Tensor& q_pos, const Tensor& k_pos,
                                   const Tensor& dq, const Tensor& dk,
                                   const Tensor& dv) {
  checks_.Attention("AttentionBackward", shape);
  checks_.AttentionBackward(shape, dout, q, k, v, out, lse, q_pos, k_pos, dq,
                            dk, dv);
  if (shape.self_causal) {  // the only block: it writes, not adds
    for (const Tensor* g : {&dq, &dk, &dv}) {
      std::fill_n(F32(*g), g->numel, 0.0f);
    }
  }
  cpu::AttentionBackward<float>(shape, F32(dout), F32(q), F32(k), F32(v),
                                F32(out), F32(lse), I32(q_pos), I32(k_pos),
                                F32(dq), F32(dk), F32(dv));
}

void CpuBackend::SwiGluForward(const Tensor& gate_up, int64_t tokens,
                               int64_t ffn, const Tensor& out) {
  checks_.SwiGluForward(gate_up, tokens, ffn, out);
  cpu::SwiGluForward<float>(F32(gate_up), tokens, ffn, F32(out));
}

void CpuBackend::SwiGluBackward(const Tensor& dout, const Tensor& gate_up,
                                int64_t tokens, int64_t ffn,
                                const Tensor& dgate_up) {
  checks_.SwiGluBackward(dout, gate_up, tokens, ffn, dgate_up);
  cpu::SwiGluBackward<float>(F32(dout), F32(gate_up), tokens, ffn,
                             F32(dgate_up));
}

void CpuBackend::LogitsRowMax(const Tensor& logits, int64_t tokens,
                              int64_t vocab_rows, const Tensor& row_max) {
  checks_.LogitsRowMax(logits, tokens, vocab_rows, row_max);
  cpu::LogitsRowMax<float>(F32(logits), tokens, vocab_rows, F32(row_max));
}

void CpuBackend::LogitsSumExpAndTarget(const Tensor& logits,
                                       const Tensor& targets,
                                       const Tensor& row_max, int64_t tokens,
                                       int64_t vocab_begin, int64_t vocab_rows,
                                       const Tensor& stats) {
  checks_.LogitsSumExpAndTarget(logits, targets, row_max, tokens, vocab_begin,
                                vocab_rows, stats);
  cpu::LogitsSumExpAndTarget<float>(F32(logits), I32(targets), F32(row_max),
                                    tokens, vocab_begin, vocab_rows,
                                    F32(stats));
}

void CpuBackend::CrossEntropyBackward(const Tensor& logits,
                                      const Tensor& targets,
                                      const Tensor& row_max,
                                      const Tensor& stats, int64_t tokens,
                                      int64_t vocab_begin, int64_t vocab_rows,
                                      float grad_scale, const Tensor& loss,
                                      const Tensor& dlogits) {
  checks_.CrossEntropyBackward(logits, targets, row_max, stats, tokens,
                               vocab_begin, vocab_rows, loss, dlogits);
  cpu::CrossEntropyBackward<float>(F32(logits), I32(targets), F32(row_max),
                                   F32(stats), tokens, vocab_begin, vocab_rows,
                                   grad_scale, F32(loss), F32(dlogits));
}

void CpuBackend::AdamW(const AdamWConfig& config, bool decay,
                       const Tensor& master, const Tensor& grad,
                       const Tensor& m, const Tensor& v, int64_t n) {
  checks_.AdamW(config, master, grad, m, v, n);
  cpu::AdamWStep<float>(config, decay, F32(master), F32(grad), F32(m), F32(v),
                        n);
}

}  // namespace tessera::executor
