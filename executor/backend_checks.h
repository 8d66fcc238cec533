// The argument checks of the Backend contract (backend.h), written once for
// every backend: each kernel's dtypes, view sizes and shapes. The kernels
// return void, so a failed check is a bug in the caller, as an illegal address
// would be on a GPU: it prints "<backend>::<kernel>: <what is wrong>" to
// stderr and aborts ("CpuBackend::Gemm: a is bf16, expected f32").
//
// A backend parameterises the checks with its class name, its compute dtype
// ("act" in the contract) and the dtypes its kernels hold; a tensor of a dtype
// the backend does not hold gets the backend's note appended, so that the
// message says why. The contract's "f32 or act" arguments accept f32 or the
// backend's act (on an f32 backend, f32 alone); attention gradients are f32.
// Checks run in the order of the kernel's arguments, shape first.
//
//   const BackendChecks checks(
//       {.backend = "CpuBackend", .act = DType::kF32,
//        .held = {DType::kF32, DType::kI32},
//        .unheld_note = "bf16 is the CUDA backend's compute dtype; the cpu "
//                       "backend computes in f32"});
//   checks.Gemm(m, n, k, a, b, c);  // returns only when the arguments fit
//   cpu::Gemm<float>(...);
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/strings/string_view.h"
#include "executor/backend.h"
#include "executor/tensor.h"

namespace tessera::executor {

// A set of dtypes, written in the enum's order ("f32 or bf16").
class DTypeSet {
 public:
  constexpr DTypeSet(std::initializer_list<DType> dtypes) {
    for (DType d : dtypes) bits_ |= Bit(d);
  }
  constexpr bool contains(DType d) const { return (bits_ & Bit(d)) != 0; }
  // The members' names joined by " or "; "" for the empty set.
  std::string ToString() const;

 private:
  static constexpr unsigned Bit(DType d) {
    return 1u << static_cast<unsigned>(d);
  }
  unsigned bits_ = 0;
};

struct BackendCheckOptions {
  // The class named in messages: "CpuBackend" -> "CpuBackend::Gemm: ...".
  std::string backend = "Backend";
  // The contract's "act" dtype (Backend::compute_dtype()).
  DType act = DType::kF32;
  // The dtypes the backend's kernels take at all.
  DTypeSet held = {DType::kF32, DType::kBF16, DType::kI32};
  // Appended in parentheses when a tensor's dtype is not held (why not).
  std::string unheld_note = "";
};

class BackendChecks {
 public:
  explicit BackendChecks(BackendCheckOptions options);

  // Prints "<backend>::<op>: <message>" to stderr and aborts.
  [[noreturn]] void Fail(absl::string_view op, absl::string_view message) const;

  // ---- Elementwise ----------------------------------------------------
  // Copy converts between f32 and bf16 and copies any dtype to itself; i32
  // converts to nothing else.
  void Copy(const Tensor& src, const Tensor& dst, int64_t n) const;
  void Fill(const Tensor& dst, int64_t n) const;
  // b and out have a's dtype.
  void Add(const Tensor& a, const Tensor& b, const Tensor& out,
           int64_t n) const;
  void Scale(const Tensor& x, int64_t n) const;
  void SumSquares(const Tensor& x, int64_t n) const;

  // ---- GEMM -----------------------------------------------------------
  void Gemm(int64_t m, int64_t n, int64_t k, const Tensor& a, const Tensor& b,
            const Tensor& c) const;

  // ---- Layers ---------------------------------------------------------
  void RmsNormForward(const Tensor& x, const Tensor& weight, int64_t rows,
                      int64_t cols, const Tensor& y, const Tensor& rstd) const;
  void RmsNormBackward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                       const Tensor& rstd, int64_t rows, int64_t cols,
                       const Tensor& dx, const Tensor& dweight) const;
  void EmbeddingForward(const Tensor& tokens, const Tensor& table,
                        int64_t n_tokens, int64_t vocab_begin,
                        int64_t vocab_rows, int64_t hidden,
                        const Tensor& out) const;
  void EmbeddingBackward(const Tensor& tokens, const Tensor& dout,
                         int64_t n_tokens, int64_t vocab_begin,
                         int64_t vocab_rows, int64_t hidden,
                         const Tensor& dtable) const;
  void RopeQkvForward(const Tensor& qkv, const Tensor& positions,
                      int64_t tokens, int64_t heads, int64_t kv_heads,
                      int64_t head_dim, const Tensor& q, const Tensor& k,
                      const Tensor& v) const;
  // dk and dv have dq's dtype.
  void RopeQkvBackward(const Tensor& dq, const Tensor& dk, const Tensor& dv,
                       const Tensor& positions, int64_t tokens, int64_t heads,
                       int64_t kv_heads, int64_t head_dim,
                       const Tensor& dqkv) const;

  // The attention shape alone, for kernel `op`: positive sizes, kv_len >= 0,
  // kv_heads dividing heads. A backend with limits of its own checks them
  // after this and before the tensors.
  void Attention(absl::string_view op, const AttentionShape& shape) const;
  // The tensors, for a shape that passed Attention.
  void AttentionForward(const AttentionShape& shape, const Tensor& q,
                        const Tensor& k, const Tensor& v, const Tensor& q_pos,
                        const Tensor& k_pos, const Tensor& out,
                        const Tensor& lse) const;
  void AttentionBackward(const AttentionShape& shape, const Tensor& dout,
                         const Tensor& q, const Tensor& k, const Tensor& v,
                         const Tensor& out, const Tensor& lse,
                         const Tensor& q_pos, const Tensor& k_pos,
                         const Tensor& dq, const Tensor& dk,
                         const Tensor& dv) const;

  void SwiGluForward(const Tensor& gate_up, int64_t tokens, int64_t ffn,
                     const Tensor& out) const;
  void SwiGluBackward(const Tensor& dout, const Tensor& gate_up, int64_t tokens,
                      int64_t ffn, const Tensor& dgate_up) const;

  void LogitsRowMax(const Tensor& logits, int64_t tokens, int64_t vocab_rows,
                    const Tensor& row_max) const;
  void LogitsSumExpAndTarget(const Tensor& logits, const Tensor& targets,
                             const Tensor& row_max, int64_t tokens,
                             int64_t vocab_begin, int64_t vocab_rows,
                             const Tensor& stats) const;
  // dlogits may alias logits only with the same dtype.
  void CrossEntropyBackward(const Tensor& logits, const Tensor& targets,
                            const Tensor& row_max, const Tensor& stats,
                            int64_t tokens, int64_t vocab_begin,
                            int64_t vocab_rows, const Tensor& loss,
                            const Tensor& dlogits) const;

  void AdamW(const AdamWConfig& config, const Tensor& master,
             const Tensor& grad, const Tensor& m, const Tensor& v,
             int64_t n) const;

 private:
  // Aborts unless `t` views at least `numel` elements of one of `dtypes`.
  void CheckTensor(absl::string_view op, absl::string_view arg, const Tensor& t,
                   DTypeSet dtypes, int64_t numel) const;
  void CheckPositive(absl::string_view op, absl::string_view arg,
                     int64_t v) const;
  void CheckNonNegative(absl::string_view op, absl::string_view arg,
                        int64_t v) const;
  void CheckRope(absl::string_view op, int64_t tokens, int64_t heads,
                 int64_t kv_heads, int64_t head_dim) const;
  // The shape and token ids of an embedding call.
  void CheckEmbedding(absl::string_view op, const Tensor& tokens,
                      int64_t n_tokens, int64_t vocab_begin, int64_t vocab_rows,
                      int64_t hidden) const;
  // The shape, logits, targets, row maxima and statistics of the
  // cross-entropy steps 2 and 3.
  void CheckLogitStats(absl::string_view op, const Tensor& logits,
                       const Tensor& targets, const Tensor& row_max,
                       const Tensor& stats, int64_t tokens, int64_t vocab_begin,
                       int64_t vocab_rows) const;
  // The contract's dtype words for this backend.
  DTypeSet Act() const { return {options_.act}; }
  DTypeSet F32OrAct() const { return {DType::kF32, options_.act}; }

  const BackendCheckOptions options_;
};

}  // namespace tessera::executor
