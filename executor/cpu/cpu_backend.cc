#include "executor/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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
  const int hardware = std::max(1u, std::thread::hardware_concurrency());
  cpu::SetBlasThreads(std::max(1, hardware / std::max(1, g_live_backends)));
}

// ---- Argument checks: misuse is a caller bug, reported and fatal ---------

[[noreturn]] void Die(absl::string_view op, absl::string_view message) {
  std::fprintf(stderr, "CpuBackend::%.*s: %.*s\n", static_cast<int>(op.size()),
               op.data(), static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
  std::abort();
}

// Aborts unless `t` views at least `numel` elements of `dtype`.
void CheckTensor(absl::string_view op, absl::string_view arg, const Tensor& t,
                 DType dtype, int64_t numel) {
  if (t.dtype != dtype) {
    std::string message = absl::StrCat(arg, " is ", DTypeName(t.dtype),
                                       ", expected ", DTypeName(dtype));
    if (t.dtype == DType::kBF16) {
      absl::StrAppend(&message,
                      " (bf16 is the CUDA backend's compute dtype; the cpu "
                      "backend computes in f32)");
    }
    Die(op, message);
  }
  if (t.numel < numel) {
    Die(op, absl::StrCat(arg, " holds ", t.numel, " elements, the shape needs ",
                         numel));
  }
  if (numel > 0 && t.data == nullptr) Die(op, absl::StrCat(arg, " is empty"));
}

void CheckF32(absl::string_view op, absl::string_view arg, const Tensor& t,
              int64_t numel) {
  CheckTensor(op, arg, t, DType::kF32, numel);
}

void CheckI32(absl::string_view op, absl::string_view arg, const Tensor& t,
              int64_t numel) {
  CheckTensor(op, arg, t, DType::kI32, numel);
}

void CheckPositive(absl::string_view op, absl::string_view arg, int64_t v) {
  if (v <= 0) Die(op, absl::StrCat(arg, " = ", v, ", must be positive"));
}

void CheckNonNegative(absl::string_view op, absl::string_view arg, int64_t v) {
  if (v < 0) Die(op, absl::StrCat(arg, " = ", v, ", must be >= 0"));
}

float* F32(const Tensor& t) { return t.data_as<float>(); }
const int32_t* I32(const Tensor& t) { return t.data_as<const int32_t>(); }

void CheckAttention(absl::string_view op, const AttentionShape& s) {
  CheckPositive(op, "shape.batch", s.batch);
  CheckPositive(op, "shape.q_len", s.q_len);
  CheckNonNegative(op, "shape.kv_len", s.kv_len);
  CheckPositive(op, "shape.heads", s.heads);
  CheckPositive(op, "shape.kv_heads", s.kv_heads);
  CheckPositive(op, "shape.head_dim", s.head_dim);
  if (s.heads % s.kv_heads != 0) {
    Die(op, absl::StrCat("shape.kv_heads = ", s.kv_heads,
                         " does not divide shape.heads = ", s.heads));
  }
}

void CheckRope(absl::string_view op, int64_t tokens, int64_t heads,
               int64_t kv_heads, int64_t head_dim) {
  CheckNonNegative(op, "tokens", tokens);
  CheckPositive(op, "heads", heads);
  CheckPositive(op, "kv_heads", kv_heads);
  CheckPositive(op, "head_dim", head_dim);
  if (head_dim % 2 != 0) {
    Die(op, absl::StrCat("head_dim = ", head_dim, ", must be even"));
  }
}

}  // namespace

CpuBackend::CpuBackend(CpuBackendOptions options)
    : blas_threads_(options.blas_threads),
      limit_bytes_(std::max<int64_t>(0, options.memory_limit_bytes)) {
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
    return absl::InvalidArgumentError(absl::StrCat(
        "cpu backend: allocating ", what,
        ": bf16 is not supported (the cpu backend computes in f32; bf16 is "
        "the CUDA backend's compute dtype)"));
  }
  if (numel < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cpu backend: allocating ", what, ": numel = ", numel, " is negative"));
  }
  const int64_t elem = static_cast<int64_t>(DTypeSize(dtype));
  if (numel > std::numeric_limits<int64_t>::max() / elem - 64) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cpu backend: allocating ", what, ": ", numel, " x ",
                     DTypeName(dtype), " overflows a 64-bit byte count"));
  }
  if (numel == 0) return DeviceBuffer(this, Tensor{nullptr, dtype, 0});
  const int64_t bytes = numel * elem;
  void* data = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (limit_bytes_ > 0 && in_use_bytes_ + bytes > limit_bytes_) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "cpu backend: allocating %s (%d x %s = %d bytes) would take the "
          "bytes in use from %d to %d, past the memory limit of %d bytes",
          what, numel, DTypeName(dtype), bytes, in_use_bytes_,
          in_use_bytes_ + bytes, limit_bytes_));
    }
    const size_t rounded = (static_cast<size_t>(bytes) + kAlignmentBytes - 1) /
                           kAlignmentBytes * kAlignmentBytes;
    data = std::aligned_alloc(kAlignmentBytes, rounded);
    if (data == nullptr) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "cpu backend: allocating %s (%d x %s = %d bytes): the host is out "
          "of memory (%d bytes in use by this backend)",
          what, numel, DTypeName(dtype), bytes, in_use_bytes_));
    }
    in_use_bytes_ += bytes;
    peak_bytes_ = std::max(peak_bytes_, in_use_bytes_);
  }
  std::memset(data, 0, static_cast<size_t>(bytes));
  return DeviceBuffer(this, Tensor{data, dtype, numel});
}

void CpuBackend::Free(const Tensor& view) {
  std::free(view.data);
  absl::MutexLock lock(&mu_);
  in_use_bytes_ -= static_cast<int64_t>(view.bytes());
}

void CpuBackend::SetMemoryLimit(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  limit_bytes_ = std::max<int64_t>(0, bytes);
}

int64_t CpuBackend::bytes_in_use() const {
  absl::MutexLock lock(&mu_);
  return in_use_bytes_;
}

int64_t CpuBackend::peak_bytes() const {
  absl::MutexLock lock(&mu_);
  return peak_bytes_;
}

void CpuBackend::ResetPeak() {
  absl::MutexLock lock(&mu_);
  peak_bytes_ = in_use_bytes_;
}

void CpuBackend::CopyToHost(const Tensor& src, void* host) {
  if (src.bytes() > 0) std::memcpy(host, src.data, src.bytes());
}

void CpuBackend::CopyFromHost(const void* host, const Tensor& dst) {
  if (dst.bytes() > 0) std::memcpy(dst.data, host, dst.bytes());
}

// ---- Elementwise --------------------------------------------------------

void CpuBackend::Copy(const Tensor& src, const Tensor& dst, int64_t n) {
  constexpr absl::string_view kOp = "Copy";
  CheckNonNegative(kOp, "n", n);
  const bool src_int = src.dtype == DType::kI32;
  const bool dst_int = dst.dtype == DType::kI32;
  if (src_int != dst_int) {
    Die(kOp, absl::StrCat("cannot convert ", DTypeName(src.dtype), " to ",
                          DTypeName(dst.dtype)));
  }
  CheckTensor(kOp, "src", src, src.dtype, n);
  CheckTensor(kOp, "dst", dst, dst.dtype, n);
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
  CheckNonNegative("Fill", "n", n);
  CheckF32("Fill", "dst", dst, n);
  std::fill_n(F32(dst), n, value);
}

void CpuBackend::Add(const Tensor& a, const Tensor& b, const Tensor& out,
                     int64_t n) {
  CheckNonNegative("Add", "n", n);
  CheckF32("Add", "a", a, n);
  CheckF32("Add", "b", b, n);
  CheckF32("Add", "out", out, n);
  const float* pa = F32(a);
  const float* pb = F32(b);
  float* po = F32(out);
  for (int64_t i = 0; i < n; ++i) po[i] = pa[i] + pb[i];
}

void CpuBackend::Scale(const Tensor& x, int64_t n, float alpha) {
  CheckNonNegative("Scale", "n", n);
  CheckF32("Scale", "x", x, n);
  float* p = F32(x);
  for (int64_t i = 0; i < n; ++i) p[i] *= alpha;
}

double CpuBackend::SumSquares(const Tensor& x, int64_t n) {
  CheckNonNegative("SumSquares", "n", n);
  CheckF32("SumSquares", "x", x, n);
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
  constexpr absl::string_view kOp = "Gemm";
  CheckNonNegative(kOp, "m", m);
  CheckNonNegative(kOp, "n", n);
  CheckNonNegative(kOp, "k", k);
  CheckF32(kOp, "a", a, m * k);
  CheckF32(kOp, "b", b, k * n);
  CheckF32(kOp, "c", c, m * n);
  cpu::Gemm<float>(trans_a, trans_b, m, n, k, alpha, F32(a), trans_a ? m : k,
                   F32(b), trans_b ? k : n, beta, F32(c), n);
}

// ---- Layers -------------------------------------------------------------

void CpuBackend::RmsNormForward(const Tensor& x, const Tensor& weight,
                                int64_t rows, int64_t cols, float eps,
                                const Tensor& y, const Tensor& rstd) {
  constexpr absl::string_view kOp = "RmsNormForward";
  CheckNonNegative(kOp, "rows", rows);
  CheckPositive(kOp, "cols", cols);
  CheckF32(kOp, "x", x, rows * cols);
  CheckF32(kOp, "weight", weight, cols);
  CheckF32(kOp, "y", y, rows * cols);
  CheckF32(kOp, "rstd", rstd, rows);
  cpu::RmsNormForward<float>(F32(x), F32(weight), rows, cols, eps, F32(y),
                             F32(rstd));
}

void CpuBackend::RmsNormBackward(const Tensor& dy, const Tensor& x,
                                 const Tensor& weight, const Tensor& rstd,
                                 int64_t rows, int64_t cols, const Tensor& dx,
                                 const Tensor& dweight) {
  constexpr absl::string_view kOp = "RmsNormBackward";
  CheckNonNegative(kOp, "rows", rows);
  CheckPositive(kOp, "cols", cols);
  CheckF32(kOp, "dy", dy, rows * cols);
  CheckF32(kOp, "x", x, rows * cols);
  CheckF32(kOp, "weight", weight, cols);
  CheckF32(kOp, "rstd", rstd, rows);
  CheckF32(kOp, "dx", dx, rows * cols);
  CheckF32(kOp, "dweight", dweight, cols);
  cpu::RmsNormBackward<float>(F32(dy), F32(x), F32(weight), F32(rstd), rows,
                              cols, F32(dx), F32(dweight));
}

void CpuBackend::EmbeddingForward(const Tensor& tokens, const Tensor& table,
                                  int64_t n_tokens, int64_t vocab_begin,
                                  int64_t vocab_rows, int64_t hidden,
                                  const Tensor& out) {
  constexpr absl::string_view kOp = "EmbeddingForward";
  CheckNonNegative(kOp, "n_tokens", n_tokens);
  CheckNonNegative(kOp, "vocab_begin", vocab_begin);
  CheckNonNegative(kOp, "vocab_rows", vocab_rows);
  CheckPositive(kOp, "hidden", hidden);
  CheckI32(kOp, "tokens", tokens, n_tokens);
  CheckF32(kOp, "table", table, vocab_rows * hidden);
  CheckF32(kOp, "out", out, n_tokens * hidden);
  cpu::EmbeddingForward<float>(I32(tokens), F32(table), n_tokens, vocab_begin,
                               vocab_rows, hidden, F32(out));
}

void CpuBackend::EmbeddingBackward(const Tensor& tokens, const Tensor& dout,
                                   int64_t n_tokens, int64_t vocab_begin,
                                   int64_t vocab_rows, int64_t hidden,
                                   const Tensor& dtable) {
  constexpr absl::string_view kOp = "EmbeddingBackward";
  CheckNonNegative(kOp, "n_tokens", n_tokens);
  CheckNonNegative(kOp, "vocab_begin", vocab_begin);
  CheckNonNegative(kOp, "vocab_rows", vocab_rows);
  CheckPositive(kOp, "hidden", hidden);
  CheckI32(kOp, "tokens", tokens, n_tokens);
  CheckF32(kOp, "dout", dout, n_tokens * hidden);
  CheckF32(kOp, "dtable", dtable, vocab_rows * hidden);
  cpu::EmbeddingBackward<float>(I32(tokens), F32(dout), n_tokens, vocab_begin,
                                vocab_rows, hidden, F32(dtable));
}

void CpuBackend::RopeQkvForward(const Tensor& qkv, const Tensor& positions,
                                int64_t tokens, int64_t heads, int64_t kv_heads,
                                int64_t head_dim, float theta, const Tensor& q,
                                const Tensor& k, const Tensor& v) {
  constexpr absl::string_view kOp = "RopeQkvForward";
  CheckRope(kOp, tokens, heads, kv_heads, head_dim);
  CheckF32(kOp, "qkv", qkv, tokens * (heads + 2 * kv_heads) * head_dim);
  CheckI32(kOp, "positions", positions, tokens);
  CheckF32(kOp, "q", q, tokens * heads * head_dim);
  CheckF32(kOp, "k", k, tokens * kv_heads * head_dim);
  CheckF32(kOp, "v", v, tokens * kv_heads * head_dim);
  cpu::RopeQkvForward<float>(F32(qkv), I32(positions), tokens, heads, kv_heads,
                             head_dim, theta, F32(q), F32(k), F32(v));
}

void CpuBackend::RopeQkvBackward(const Tensor& dq, const Tensor& dk,
                                 const Tensor& dv, const Tensor& positions,
                                 int64_t tokens, int64_t heads,
                                 int64_t kv_heads, int64_t head_dim,
                                 float theta, const Tensor& dqkv) {
  constexpr absl::string_view kOp = "RopeQkvBackward";
  CheckRope(kOp, tokens, heads, kv_heads, head_dim);
  CheckF32(kOp, "dq", dq, tokens * heads * head_dim);
  CheckF32(kOp, "dk", dk, tokens * kv_heads * head_dim);
  CheckF32(kOp, "dv", dv, tokens * kv_heads * head_dim);
  CheckI32(kOp, "positions", positions, tokens);
  CheckF32(kOp, "dqkv", dqkv, tokens * (heads + 2 * kv_heads) * head_dim);
  cpu::RopeQkvBackward<float>(F32(dq), F32(dk), F32(dv), I32(positions), tokens,
                              heads, kv_heads, head_dim, theta, F32(dqkv));
}

void CpuBackend::AttentionForward(const AttentionShape& shape, const Tensor& q,
                                  const Tensor& k, const Tensor& v,
                                  const Tensor& q_pos, const Tensor& k_pos,
                                  bool accumulate, const Tensor& out,
                                  const Tensor& lse) {
  constexpr absl::string_view kOp = "AttentionForward";
  CheckAttention(kOp, shape);
  const int64_t q_numel =
      shape.batch * shape.q_len * shape.heads * shape.head_dim;
  const int64_t kv_numel =
      shape.batch * shape.kv_len * shape.kv_heads * shape.head_dim;
  CheckF32(kOp, "q", q, q_numel);
  CheckF32(kOp, "k", k, kv_numel);
  CheckF32(kOp, "v", v, kv_numel);
  CheckI32(kOp, "q_pos", q_pos, shape.q_len);
  CheckI32(kOp, "k_pos", k_pos, shape.kv_len);
  CheckF32(kOp, "out", out, q_numel);
  CheckF32(kOp, "lse", lse, shape.batch * shape.heads * shape.q_len);
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
  constexpr absl::string_view kOp = "AttentionBackward";
  CheckAttention(kOp, shape);
  const int64_t q_numel =
      shape.batch * shape.q_len * shape.heads * shape.head_dim;
  const int64_t kv_numel =
      shape.batch * shape.kv_len * shape.kv_heads * shape.head_dim;
  CheckF32(kOp, "dout", dout, q_numel);
  CheckF32(kOp, "q", q, q_numel);
  CheckF32(kOp, "k", k, kv_numel);
  CheckF32(kOp, "v", v, kv_numel);
  CheckF32(kOp, "out", out, q_numel);
  CheckF32(kOp, "lse", lse, shape.batch * shape.heads * shape.q_len);
  CheckI32(kOp, "q_pos", q_pos, shape.q_len);
  CheckI32(kOp, "k_pos", k_pos, shape.kv_len);
  CheckF32(kOp, "dq", dq, q_numel);
  CheckF32(kOp, "dk", dk, kv_numel);
  CheckF32(kOp, "dv", dv, kv_numel);
  cpu::AttentionBackward<float>(shape, F32(dout), F32(q), F32(k), F32(v),
                                F32(out), F32(lse), I32(q_pos), I32(k_pos),
                                F32(dq), F32(dk), F32(dv));
}

void CpuBackend::SwiGluForward(const Tensor& gate_up, int64_t tokens,
                               int64_t ffn, const Tensor& out) {
  constexpr absl::string_view kOp = "SwiGluForward";
  CheckNonNegative(kOp, "tokens", tokens);
  CheckPositive(kOp, "ffn", ffn);
  CheckF32(kOp, "gate_up", gate_up, tokens * 2 * ffn);
  CheckF32(kOp, "out", out, tokens * ffn);
  cpu::SwiGluForward<float>(F32(gate_up), tokens, ffn, F32(out));
}

void CpuBackend::SwiGluBackward(const Tensor& dout, const Tensor& gate_up,
                                int64_t tokens, int64_t ffn,
                                const Tensor& dgate_up) {
  constexpr absl::string_view kOp = "SwiGluBackward";
  CheckNonNegative(kOp, "tokens", tokens);
  CheckPositive(kOp, "ffn", ffn);
  CheckF32(kOp, "dout", dout, tokens * ffn);
  CheckF32(kOp, "gate_up", gate_up, tokens * 2 * ffn);
  CheckF32(kOp, "dgate_up", dgate_up, tokens * 2 * ffn);
  cpu::SwiGluBackward<float>(F32(dout), F32(gate_up), tokens, ffn,
                             F32(dgate_up));
}

void CpuBackend::LogitsRowMax(const Tensor& logits, int64_t tokens,
                              int64_t vocab_rows, const Tensor& row_max) {
  constexpr absl::string_view kOp = "LogitsRowMax";
  CheckNonNegative(kOp, "tokens", tokens);
  CheckNonNegative(kOp, "vocab_rows", vocab_rows);
  CheckF32(kOp, "logits", logits, tokens * vocab_rows);
  CheckF32(kOp, "row_max", row_max, tokens);
  cpu::LogitsRowMax<float>(F32(logits), tokens, vocab_rows, F32(row_max));
}

void CpuBackend::LogitsSumExpAndTarget(const Tensor& logits,
                                       const Tensor& targets,
                                       const Tensor& row_max, int64_t tokens,
                                       int64_t vocab_begin, int64_t vocab_rows,
                                       const Tensor& stats) {
  constexpr absl::string_view kOp = "LogitsSumExpAndTarget";
  CheckNonNegative(kOp, "tokens", tokens);
  CheckNonNegative(kOp, "vocab_begin", vocab_begin);
  CheckNonNegative(kOp, "vocab_rows", vocab_rows);
  CheckF32(kOp, "logits", logits, tokens * vocab_rows);
  CheckI32(kOp, "targets", targets, tokens);
  CheckF32(kOp, "row_max", row_max, tokens);
  CheckF32(kOp, "stats", stats, 2 * tokens);
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
  constexpr absl::string_view kOp = "CrossEntropyBackward";
  CheckNonNegative(kOp, "tokens", tokens);
  CheckNonNegative(kOp, "vocab_begin", vocab_begin);
  CheckNonNegative(kOp, "vocab_rows", vocab_rows);
  CheckF32(kOp, "logits", logits, tokens * vocab_rows);
  CheckI32(kOp, "targets", targets, tokens);
  CheckF32(kOp, "row_max", row_max, tokens);
  CheckF32(kOp, "stats", stats, 2 * tokens);
  CheckF32(kOp, "loss", loss, tokens);
  CheckF32(kOp, "dlogits", dlogits, tokens * vocab_rows);
  cpu::CrossEntropyBackward<float>(F32(logits), I32(targets), F32(row_max),
                                   F32(stats), tokens, vocab_begin, vocab_rows,
                                   grad_scale, F32(loss), F32(dlogits));
}

void CpuBackend::AdamW(const AdamWConfig& config, bool decay,
                       const Tensor& master, const Tensor& grad,
                       const Tensor& m, const Tensor& v, int64_t n) {
  constexpr absl::string_view kOp = "AdamW";
  CheckNonNegative(kOp, "n", n);
  CheckPositive(kOp, "config.step", config.step);
  CheckF32(kOp, "master", master, n);
  CheckF32(kOp, "grad", grad, n);
  CheckF32(kOp, "m", m, n);
  CheckF32(kOp, "v", v, n);
  cpu::AdamWStep<float>(config, decay, F32(master), F32(grad), F32(m), F32(v),
                        n);
}

}  // namespace tessera::executor
