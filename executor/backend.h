// The compute backend of a training step: memory with a limit and a high-water
// mark, and the kernels of a Llama layer, each as a paired forward/backward.
// Implementations: CpuBackend (executor/cpu/, fp32 over a BLAS) and the CUDA
// backend (executor/cuda/, bf16 activations, cuBLASLt). The parallel engine
// (executor/engine/) is written once against this interface.
//
// Conventions for every kernel below:
// - Tensors are row-major and contiguous. "act" means the backend's
//   compute_dtype() (f32 on CPU, bf16 on CUDA); "f32" means float always;
//   "i32" means int32.
// - Linear weights are stored [out_features, in_features] (as torch.nn.Linear):
//   y = x W^T.
// - Outputs are overwritten unless the contract says "adds into" (+=): weight
//   gradients always add, so that micro-batches accumulate.
// - Kernels are ordered on the backend's compute stream; host code sees their
//   results after Synchronize() or a copy to the host.
// - A tensor of the wrong dtype, a view smaller than the shape needs, or a
//   non-positive shape is a bug in the caller: the kernels return void, so
//   the backend aborts with a message naming the kernel and the argument (as
//   an illegal address would on a GPU).
//
//   CpuBackend backend;
//   TESSERA_ASSIGN_OR_RETURN(DeviceBuffer x, backend.Allocate(n, DType::kF32));
//   backend.RmsNormForward(x.view(), w, rows, cols, eps, y, rstd);
#pragma once

#include <cstdint>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "executor/tensor.h"

namespace tessera::executor {

class Backend;

// Memory owned by a Backend, released when destroyed. Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Backend* owner, Tensor view) : owner_(owner), view_(view) {}
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : owner_(std::exchange(other.owner_, nullptr)),
        view_(std::exchange(other.view_, Tensor{})) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { Reset(); }

  // Frees the memory now; the buffer becomes empty.
  void Reset();
  const Tensor& view() const { return view_; }
  bool empty() const { return view_.data == nullptr; }

 private:
  Backend* owner_ = nullptr;
  Tensor view_;
};

// The shape of one attention call: queries [batch, q_len, heads, head_dim]
// against keys/values [batch, kv_len, kv_heads, head_dim]. Query head j reads
// kv head j / (heads / kv_heads) (grouped-query attention).
struct AttentionShape {
  int64_t batch = 0;
  int64_t q_len = 0;
  int64_t kv_len = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  // The caller's promise that q_pos and k_pos both hold 0..q_len-1 (q_len ==
  // kv_len): plain causal self-attention, no context parallelism. A backend
  // may then run a fused library kernel that takes no positions (the CUDA
  // backend's cuDNN attention); the result is the same.
  bool self_causal = false;
};

// Decoupled AdamW (Loshchilov & Hutter 2019) with bias correction.
struct AdamWConfig {
  float lr = 3e-4f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.1f;
  int64_t step = 1;  // 1-based, for bias correction
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual absl::string_view name() const = 0;  // "cpu", "cuda"
  virtual DType compute_dtype() const = 0;     // the "act" dtype

  // ---- Memory ----------------------------------------------------------
  // Allocates `numel` zero-initialised elements. Fails with RESOURCE_EXHAUSTED,
  // naming `what` and the sizes, when the allocation would take the bytes in
  // use past the memory limit (or the device has no room), and with
  // INVALID_ARGUMENT for a dtype the backend does not hold (bf16 on CPU).
  virtual absl::StatusOr<DeviceBuffer> Allocate(int64_t numel, DType dtype,
                                                absl::string_view what) = 0;
  // 0 = no limit other than the device's own.
  virtual void SetMemoryLimit(int64_t bytes) = 0;
  virtual int64_t bytes_in_use() const = 0;
  virtual int64_t peak_bytes() const = 0;  // high-water mark since reset
  virtual void ResetPeak() = 0;

  // Waits for every kernel issued so far.
  virtual void Synchronize() = 0;
  // Host <-> backend copies of `bytes` bytes (ordered after issued kernels).
  virtual void CopyToHost(const Tensor& src, void* host) = 0;
  virtual void CopyFromHost(const void* host, const Tensor& dst) = 0;

  // ---- Elementwise -----------------------------------------------------
  // dst[i] = src[i] for i < n, converting between f32 and bf16 when the
  // dtypes differ.
  virtual void Copy(const Tensor& src, const Tensor& dst, int64_t n) = 0;
  // dst[i] = value.
  virtual void Fill(const Tensor& dst, int64_t n, float value) = 0;
  // out[i] = a[i] + b[i]; out may alias a or b (the residual add).
  virtual void Add(const Tensor& a, const Tensor& b, const Tensor& out,
                   int64_t n) = 0;
  // x[i] *= alpha.
  virtual void Scale(const Tensor& x, int64_t n, float alpha) = 0;
  // Sum of x[i]^2 in double (for gradient norms and checks); synchronous.
  virtual double SumSquares(const Tensor& x, int64_t n) = 0;

  // ---- GEMM ------------------------------------------------------------
  // c[m,n] = alpha * op(a)[m,k] * op(b)[k,n] + beta * c, op = transpose when
  // the flag is set. a and b are act; c is act or f32 (weight gradients
  // accumulate in f32 with beta = 1). Leading dimensions are the row lengths
  // of the stored matrices: a is [m,k] (or [k,m] transposed), b is [k,n] (or
  // [n,k] transposed), c is [m,n].
  virtual void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                    float alpha, const Tensor& a, const Tensor& b, float beta,
                    const Tensor& c) = 0;

  // ---- RMSNorm (Zhang & Sennrich 2019) ---------------------------------
  // y = x * rstd * weight, rstd[r] = 1 / sqrt(mean_c(x[r,c]^2) + eps).
  // x, y: act [rows, cols]; weight: act [cols]; rstd: f32 [rows] (saved).
  virtual void RmsNormForward(const Tensor& x, const Tensor& weight,
                              int64_t rows, int64_t cols, float eps,
                              const Tensor& y, const Tensor& rstd) = 0;
  // Adds dL/dx into dx (act; the residual stream's gradient) and dL/dweight
  // into dweight (f32 [cols]).
  virtual void RmsNormBackward(const Tensor& dy, const Tensor& x,
                               const Tensor& weight, const Tensor& rstd,
                               int64_t rows, int64_t cols, const Tensor& dx,
                               const Tensor& dweight) = 0;

  // ---- Embedding (vocabulary-parallel) ---------------------------------
  // out[t,:] = table[tokens[t] - vocab_begin, :] when the token is in
  // [vocab_begin, vocab_begin + vocab_rows), else 0. tokens: i32 [n_tokens];
  // table: act [vocab_rows, hidden]; out: act [n_tokens, hidden].
  virtual void EmbeddingForward(const Tensor& tokens, const Tensor& table,
                                int64_t n_tokens, int64_t vocab_begin,
                                int64_t vocab_rows, int64_t hidden,
                                const Tensor& out) = 0;
  // Adds dout[t,:] into dtable (f32) at the rows of the local tokens.
  virtual void EmbeddingBackward(const Tensor& tokens, const Tensor& dout,
                                 int64_t n_tokens, int64_t vocab_begin,
                                 int64_t vocab_rows, int64_t hidden,
                                 const Tensor& dtable) = 0;

  // ---- Rotary position embedding (Su et al. 2021), rotate-half form -----
  // qkv: act [tokens, (heads + 2*kv_heads) * head_dim], each row holding the
  // q heads, then the k heads, then the v heads (the fused QKV projection's
  // output). Writes q: act [tokens, heads*head_dim], k and v: act [tokens,
  // kv_heads*head_dim], rotating q and k: with half = head_dim/2 and
  // angle_i = positions[t] * theta^(-2i/head_dim), i < half,
  //   out[i] = x[i] cos - x[i+half] sin, out[i+half] = x[i+half] cos + x[i]
  //   sin.
  // positions: i32 [tokens], the global position of each token.
  virtual void RopeQkvForward(const Tensor& qkv, const Tensor& positions,
                              int64_t tokens, int64_t heads, int64_t kv_heads,
                              int64_t head_dim, float theta, const Tensor& q,
                              const Tensor& k, const Tensor& v) = 0;
  // The inverse: packs dq, dk (rotated back) and dv into dqkv (act, written).
  // dq, dk, dv are f32 or act (the attention backward's accumulators).
  virtual void RopeQkvBackward(const Tensor& dq, const Tensor& dk,
                               const Tensor& dv, const Tensor& positions,
                               int64_t tokens, int64_t heads, int64_t kv_heads,
                               int64_t head_dim, float theta,
                               const Tensor& dqkv) = 0;

  // ---- Causal attention, block form (for ring attention) ---------------
  // q: act [batch, q_len, heads, head_dim]; k, v: act [batch, kv_len,
  // kv_heads, head_dim]; q_pos: i32 [q_len], k_pos: i32 [kv_len] global
  // positions (the same for every batch row). Query i sees key j iff
  // k_pos[j] <= q_pos[i]. Scale 1/sqrt(head_dim).
  // out: act or f32 [batch, q_len, heads, head_dim]; lse: f32 [batch, heads,
  // q_len], the natural log of the softmax denominator (-inf where no key is
  // visible; out is 0 for such rows). accumulate = false writes out/lse from
  // this block alone; accumulate = true merges this block into the running
  // (out, lse) — a running row whose lse is -inf is empty whatever its out
  // holds, and takes this block's row:
  //   lse' = log(exp(lse) + exp(lse_b)),
  //   out' = out * exp(lse - lse') + out_b * exp(lse_b - lse').
  // The s x s score matrix is never stored whole.
  virtual void AttentionForward(const AttentionShape& shape, const Tensor& q,
                                const Tensor& k, const Tensor& v,
                                const Tensor& q_pos, const Tensor& k_pos,
                                bool accumulate, const Tensor& out,
                                const Tensor& lse) = 0;
  // Given dout and the final (out, lse) of the query rows over all key
  // blocks, adds this key block's contribution into dq ([batch, q_len, heads,
  // head_dim]), dk and dv ([batch, kv_len, kv_heads, head_dim]), all three
  // f32. A shape.self_causal block is the whole sequence, the only block:
  // it writes dq, dk and dv instead (what they held is ignored), and they
  // may be act as well as f32 (cuDNN's bf16 gradients land in place).
  virtual void AttentionBackward(const AttentionShape& shape,
                                 const Tensor& dout, const Tensor& q,
                                 const Tensor& k, const Tensor& v,
                                 const Tensor& out, const Tensor& lse,
                                 const Tensor& q_pos, const Tensor& k_pos,
                                 const Tensor& dq, const Tensor& dk,
                                 const Tensor& dv) = 0;

  // ---- SwiGLU (Shazeer 2020) -------------------------------------------
  // gate_up: act [tokens, 2*ffn], gate in columns [0, ffn), up in [ffn,
  // 2*ffn); out: act [tokens, ffn] = silu(gate) * up, silu(x) = x sigmoid(x).
  virtual void SwiGluForward(const Tensor& gate_up, int64_t tokens, int64_t ffn,
                             const Tensor& out) = 0;
  // Writes dgate_up (act [tokens, 2*ffn]).
  virtual void SwiGluBackward(const Tensor& dout, const Tensor& gate_up,
                              int64_t tokens, int64_t ffn,
                              const Tensor& dgate_up) = 0;

  // ---- Cross-entropy over a vocabulary-parallel shard ------------------
  // logits: act or f32 [tokens, vocab_rows], the columns [vocab_begin,
  // vocab_begin + vocab_rows) of the full vocabulary; targets: i32 [tokens].
  // The engine combines ranks between the three calls:
  //   1. LogitsRowMax -> row_max (f32 [tokens]); AllReduce(max) over tp.
  //   2. LogitsSumExpAndTarget -> stats (f32 [2, tokens]): stats[0][t] =
  //      sum_v exp(logit[t,v] - row_max[t]); stats[1][t] = logit[t, target -
  //      vocab_begin] when the target is local, else 0; AllReduce(sum) over tp.
  //   3. CrossEntropyBackward -> loss[t] = log(stats[0][t]) + row_max[t] -
  //      stats[1][t] (f32 [tokens]) and dlogits (act or f32, may alias logits)
  //      = grad_scale * (softmax - onehot(target)).
  // Targets must lie in [0, vocab): there is no ignore index; the token
  // sources (engine/token_data.h) guarantee it.
  virtual void LogitsRowMax(const Tensor& logits, int64_t tokens,
                            int64_t vocab_rows, const Tensor& row_max) = 0;
  virtual void LogitsSumExpAndTarget(const Tensor& logits,
                                     const Tensor& targets,
                                     const Tensor& row_max, int64_t tokens,
                                     int64_t vocab_begin, int64_t vocab_rows,
                                     const Tensor& stats) = 0;
  virtual void CrossEntropyBackward(const Tensor& logits, const Tensor& targets,
                                    const Tensor& row_max, const Tensor& stats,
                                    int64_t tokens, int64_t vocab_begin,
                                    int64_t vocab_rows, float grad_scale,
                                    const Tensor& loss,
                                    const Tensor& dlogits) = 0;

  // ---- AdamW -----------------------------------------------------------
  // One AdamW step on n f32 elements of master weights with their gradients
  // and moments (all f32 [n]); weight decay applies only when `decay`.
  //   m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
  //   w -= lr * (m / (1-b1^step) / (sqrt(v / (1-b2^step)) + eps) + wd * w).
  virtual void AdamW(const AdamWConfig& config, bool decay,
                     const Tensor& master, const Tensor& grad, const Tensor& m,
                     const Tensor& v, int64_t n) = 0;

 protected:
  friend class DeviceBuffer;
  // Releases memory handed out by Allocate.
  virtual void Free(const Tensor& view) = 0;
};

inline DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Reset();
    owner_ = std::exchange(other.owner_, nullptr);
    view_ = std::exchange(other.view_, Tensor{});
  }
  return *this;
}

inline void DeviceBuffer::Reset() {
  if (owner_ != nullptr && view_.data != nullptr) owner_->Free(view_);
  owner_ = nullptr;
  view_ = Tensor{};
}

}  // namespace tessera::executor
