#include "executor/backend_checks.h"

#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tessera::executor {
namespace {

// The element counts of an attention call's tensors.
struct AttentionNumel {
  int64_t q;    // q, out, dout, dq: [batch, q_len, heads, head_dim]
  int64_t kv;   // k, v, dk, dv: [batch, kv_len, kv_heads, head_dim]
  int64_t lse;  // [batch, heads, q_len]
};

AttentionNumel NumelOf(const AttentionShape& s) {
  return {s.batch * s.q_len * s.heads * s.head_dim,
          s.batch * s.kv_len * s.kv_heads * s.head_dim,
          s.batch * s.heads * s.q_len};
}

}  // namespace

std::string DTypeSet::ToString() const {
  std::vector<absl::string_view> names;
  for (DType d : {DType::kF32, DType::kBF16, DType::kI32}) {
    if (contains(d)) names.push_back(DTypeName(d));
  }
  return absl::StrJoin(names, " or ");
}

BackendChecks::BackendChecks(BackendCheckOptions options)
    : options_(std::move(options)) {}

void BackendChecks::Fail(absl::string_view op,
                         absl::string_view message) const {
  std::fprintf(stderr, "%s::%.*s: %.*s\n", options_.backend.c_str(),
               static_cast<int>(op.size()), op.data(),
               static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
  std::abort();
}

// ---- Building blocks -----------------------------------------------------

void BackendChecks::CheckTensor(absl::string_view op, absl::string_view arg,
                                const Tensor& t, DTypeSet dtypes,
                                int64_t numel) const {
  if (!dtypes.contains(t.dtype)) {
    std::string message = absl::StrCat(arg, " is ", DTypeName(t.dtype),
                                       ", expected ", dtypes.ToString());
    if (!options_.held.contains(t.dtype) && !options_.unheld_note.empty()) {
      absl::StrAppend(&message, " (", options_.unheld_note, ")");
    }
    Fail(op, message);
  }
  if (t.numel < numel) {
    Fail(op, absl::StrCat(arg, " holds ", t.numel,
                          " elements, the shape needs ", numel));
  }
  if (numel > 0 && t.data == nullptr) Fail(op, absl::StrCat(arg, " is empty"));
}

void BackendChecks::CheckPositive(absl::string_view op, absl::string_view arg,
                                  int64_t v) const {
  if (v <= 0) Fail(op, absl::StrCat(arg, " = ", v, ", must be positive"));
}

void BackendChecks::CheckNonNegative(absl::string_view op,
                                     absl::string_view arg, int64_t v) const {
  if (v < 0) Fail(op, absl::StrCat(arg, " = ", v, ", must be >= 0"));
}

void BackendChecks::CheckRope(absl::string_view op, int64_t tokens,
                              int64_t heads, int64_t kv_heads,
                              int64_t head_dim) const {
  CheckNonNegative(op, "tokens", tokens);
  CheckPositive(op, "heads", heads);
  CheckPositive(op, "kv_heads", kv_heads);
  CheckPositive(op, "head_dim", head_dim);
  if (head_dim % 2 != 0) {
    Fail(op, absl::StrCat("head_dim = ", head_dim, ", must be even"));
  }
}

void BackendChecks::CheckEmbedding(absl::string_view op, const Tensor& tokens,
                                   int64_t n_tokens, int64_t vocab_begin,
                                   int64_t vocab_rows, int64_t hidden) const {
  CheckNonNegative(op, "n_tokens", n_tokens);
  CheckNonNegative(op, "vocab_begin", vocab_begin);
  CheckNonNegative(op, "vocab_rows", vocab_rows);
  CheckPositive(op, "hidden", hidden);
  CheckTensor(op, "tokens", tokens, {DType::kI32}, n_tokens);
}

void BackendChecks::CheckLogitStats(absl::string_view op, const Tensor& logits,
                                    const Tensor& targets,
                                    const Tensor& row_max, const Tensor& stats,
                                    int64_t tokens, int64_t vocab_begin,
                                    int64_t vocab_rows) const {
  CheckNonNegative(op, "tokens", tokens);
  CheckNonNegative(op, "vocab_begin", vocab_begin);
  CheckNonNegative(op, "vocab_rows", vocab_rows);
  CheckTensor(op, "logits", logits, F32OrAct(), tokens * vocab_rows);
  CheckTensor(op, "targets", targets, {DType::kI32}, tokens);
  CheckTensor(op, "row_max", row_max, {DType::kF32}, tokens);
  CheckTensor(op, "stats", stats, {DType::kF32}, 2 * tokens);
}

// ---- Elementwise ---------------------------------------------------------

void BackendChecks::Copy(const Tensor& src, const Tensor& dst,
                         int64_t n) const {
  constexpr absl::string_view kOp = "Copy";
  CheckNonNegative(kOp, "n", n);
  if ((src.dtype == DType::kI32) != (dst.dtype == DType::kI32)) {
    Fail(kOp, absl::StrCat("cannot convert ", DTypeName(src.dtype), " to ",
                           DTypeName(dst.dtype)));
  }
  CheckTensor(kOp, "src", src, {src.dtype}, n);
  CheckTensor(kOp, "dst", dst, {dst.dtype}, n);
}

void BackendChecks::Fill(const Tensor& dst, int64_t n) const {
  CheckNonNegative("Fill", "n", n);
  CheckTensor("Fill", "dst", dst, F32OrAct(), n);
}

void BackendChecks::Add(const Tensor& a, const Tensor& b, const Tensor& out,
                        int64_t n) const {
  constexpr absl::string_view kOp = "Add";
  CheckNonNegative(kOp, "n", n);
  CheckTensor(kOp, "a", a, F32OrAct(), n);
  CheckTensor(kOp, "b", b, {a.dtype}, n);
  CheckTensor(kOp, "out", out, {a.dtype}, n);
}

void BackendChecks::Scale(const Tensor& x, int64_t n) const {
  CheckNonNegative("Scale", "n", n);
  CheckTensor("Scale", "x", x, F32OrAct(), n);
}

void BackendChecks::SumSquares(const Tensor& x, int64_t n) const {
  CheckNonNegative("SumSquares", "n", n);
  CheckTensor("SumSquares", "x", x, F32OrAct(), n);
}

// ---- GEMM ----------------------------------------------------------------

void BackendChecks::Gemm(int64_t m, int64_t n, int64_t k, const Tensor& a,
                         const Tensor& b, const Tensor& c) const {
  constexpr absl::string_view kOp = "Gemm";
  CheckNonNegative(kOp, "m", m);
  CheckNonNegative(kOp, "n", n);
  CheckNonNegative(kOp, "k", k);
  CheckTensor(kOp, "a", a, Act(), m * k);
  CheckTensor(kOp, "b", b, Act(), k * n);
  CheckTensor(kOp, "c", c, F32OrAct(), m * n);
}

// ---- Layers --------------------------------------------------------------

void BackendChecks::RmsNormForward(const Tensor& x, const Tensor& weight,
                                   int64_t rows, int64_t cols, const Tensor& y,
                                   const Tensor& rstd) const {
  constexpr absl::string_view kOp = "RmsNormForward";
  CheckNonNegative(kOp, "rows", rows);
  CheckPositive(kOp, "cols", cols);
  CheckTensor(kOp, "x", x, Act(), rows * cols);
  CheckTensor(kOp, "weight", weight, Act(), cols);
  CheckTensor(kOp, "y", y, Act(), rows * cols);
  CheckTensor(kOp, "rstd", rstd, {DType::kF32}, rows);
}

void BackendChecks::RmsNormBackward(const Tensor& dy, const Tensor& x,
                                    const Tensor& weight, const Tensor& rstd,
                                    int64_t rows, int64_t cols,
                                    const Tensor& dx,
                                    const Tensor& dweight) const {
  constexpr absl::string_view kOp = "RmsNormBackward";
  CheckNonNegative(kOp, "rows", rows);
  CheckPositive(kOp, "cols", cols);
  CheckTensor(kOp, "dy", dy, Act(), rows * cols);
  CheckTensor(kOp, "x", x, Act(), rows * cols);
  CheckTensor(kOp, "weight", weight, Act(), cols);
  CheckTensor(kOp, "rstd", rstd, {DType::kF32}, rows);
  CheckTensor(kOp, "dx", dx, Act(), rows * cols);
  CheckTensor(kOp, "dweight", dweight, {DType::kF32}, cols);
}

void BackendChecks::EmbeddingForward(const Tensor& tokens, const Tensor& table,
                                     int64_t n_tokens, int64_t vocab_begin,
                                     int64_t vocab_rows, int64_t hidden,
                                     const Tensor& out) const {
  constexpr absl::string_view kOp = "EmbeddingForward";
  CheckEmbedding(kOp, tokens, n_tokens, vocab_begin, vocab_rows, hidden);
  CheckTensor(kOp, "table", table, Act(), vocab_rows * hidden);
  CheckTensor(kOp, "out", out, Act(), n_tokens * hidden);
}

void BackendChecks::EmbeddingBackward(const Tensor& tokens, const Tensor& dout,
                                      int64_t n_tokens, int64_t vocab_begin,
                                      int64_t vocab_rows, int64_t hidden,
                                      const Tensor& dtable) const {
  constexpr absl::string_view kOp = "EmbeddingBackward";
  CheckEmbedding(kOp, tokens, n_tokens, vocab_begin, vocab_rows, hidden);
  CheckTensor(kOp, "dout", dout, Act(), n_tokens * hidden);
  CheckTensor(kOp, "dtable", dtable, {DType::kF32}, vocab_rows * hidden);
}

void BackendChecks::RopeQkvForward(const Tensor& qkv, const Tensor& positions,
                                   int64_t tokens, int64_t heads,
                                   int64_t kv_heads, int64_t head_dim,
                                   const Tensor& q, const Tensor& k,
                                   const Tensor& v) const {
  constexpr absl::string_view kOp = "RopeQkvForward";
  CheckRope(kOp, tokens, heads, kv_heads, head_dim);
  CheckTensor(kOp, "qkv", qkv, Act(),
              tokens * (heads + 2 * kv_heads) * head_dim);
  CheckTensor(kOp, "positions", positions, {DType::kI32}, tokens);
  CheckTensor(kOp, "q", q, Act(), tokens * heads * head_dim);
  CheckTensor(kOp, "k", k, Act(), tokens * kv_heads * head_dim);
  CheckTensor(kOp, "v", v, Act(), tokens * kv_heads * head_dim);
}

void BackendChecks::RopeQkvBackward(const Tensor& dq, const Tensor& dk,
                                    const Tensor& dv, const Tensor& positions,
                                    int64_t tokens, int64_t heads,
                                    int64_t kv_heads, int64_t head_dim,
                                    const Tensor& dqkv) const {
  constexpr absl::string_view kOp = "RopeQkvBackward";
  CheckRope(kOp, tokens, heads, kv_heads, head_dim);
  CheckTensor(kOp, "dq", dq, F32OrAct(), tokens * heads * head_dim);
  CheckTensor(kOp, "dk", dk, {dq.dtype}, tokens * kv_heads * head_dim);
  CheckTensor(kOp, "dv", dv, {dq.dtype}, tokens * kv_heads * head_dim);
  CheckTensor(kOp, "positions", positions, {DType::kI32}, tokens);
  CheckTensor(kOp, "dqkv", dqkv, Act(),
              tokens * (heads + 2 * kv_heads) * head_dim);
}

void BackendChecks::Attention(absl::string_view op,
                              const AttentionShape& s) const {
  CheckPositive(op, "shape.batch", s.batch);
  CheckPositive(op, "shape.q_len", s.q_len);
  CheckNonNegative(op, "shape.kv_len", s.kv_len);
  CheckPositive(op, "shape.heads", s.heads);
  CheckPositive(op, "shape.kv_heads", s.kv_heads);
  CheckPositive(op, "shape.head_dim", s.head_dim);
  if (s.heads % s.kv_heads != 0) {
    Fail(op, absl::StrCat("shape.kv_heads = ", s.kv_heads,
                          " does not divide shape.heads = ", s.heads));
  }
  if (s.self_causal && s.q_len != s.kv_len) {
    Fail(op, absl::StrCat("shape.self_causal with q_len = ", s.q_len,
                          " != kv_len = ", s.kv_len));
  }
}

void BackendChecks::AttentionForward(const AttentionShape& shape,
                                     const Tensor& q, const Tensor& k,
                                     const Tensor& v, const Tensor& q_pos,
                                     const Tensor& k_pos, const Tensor& out,
                                     const Tensor& lse) const {
  constexpr absl::string_view kOp = "AttentionForward";
  const AttentionNumel numel = NumelOf(shape);
  CheckTensor(kOp, "q", q, Act(), numel.q);
  CheckTensor(kOp, "k", k, Act(), numel.kv);
  CheckTensor(kOp, "v", v, Act(), numel.kv);
  CheckTensor(kOp, "q_pos", q_pos, {DType::kI32}, shape.q_len);
  CheckTensor(kOp, "k_pos", k_pos, {DType::kI32}, shape.kv_len);
  CheckTensor(kOp, "out", out, F32OrAct(), numel.q);
  CheckTensor(kOp, "lse", lse, {DType::kF32}, numel.lse);
}

void BackendChecks::AttentionBackward(const AttentionShape& shape,
                                      const Tensor& dout, const Tensor& q,
                                      const Tensor& k, const Tensor& v,
                                      const Tensor& out, const Tensor& lse,
                                      const Tensor& q_pos, const Tensor& k_pos,
                                      const Tensor& dq, const Tensor& dk,
                                      const Tensor& dv) const {
  constexpr absl::string_view kOp = "AttentionBackward";
  const AttentionNumel numel = NumelOf(shape);
  CheckTensor(kOp, "dout", dout, Act(), numel.q);
  CheckTensor(kOp, "q", q, Act(), numel.q);
  CheckTensor(kOp, "k", k, Act(), numel.kv);
  CheckTensor(kOp, "v", v, Act(), numel.kv);
  CheckTensor(kOp, "out", out, F32OrAct(), numel.q);
  CheckTensor(kOp, "lse", lse, {DType::kF32}, numel.lse);
  CheckTensor(kOp, "q_pos", q_pos, {DType::kI32}, shape.q_len);
  CheckTensor(kOp, "k_pos", k_pos, {DType::kI32}, shape.kv_len);
  // Attention gradients accumulate in f32 on every backend (the CUDA
  // kernels' dq takes atomic adds from every key tile); a self-causal
  // block writes them, in f32 or act.
  CheckTensor(kOp, "dq", dq,
              shape.self_causal ? F32OrAct() : DTypeSet{DType::kF32},
              numel.q);
  CheckTensor(kOp, "dk", dk, {dq.dtype}, numel.kv);
  CheckTensor(kOp, "dv", dv, {dq.dtype}, numel.kv);
}

void BackendChecks::SwiGluForward(const Tensor& gate_up, int64_t tokens,
                                  int64_t ffn, const Tensor& out) const {
  constexpr absl::string_view kOp = "SwiGluForward";
  CheckNonNegative(kOp, "tokens", tokens);
  CheckPositive(kOp, "ffn", ffn);
  CheckTensor(kOp, "gate_up", gate_up, Act(), tokens * 2 * ffn);
  CheckTensor(kOp, "out", out, Act(), tokens * ffn);
}

void BackendChecks::SwiGluBackward(const Tensor& dout, const Tensor& gate_up,
                                   int64_t tokens, int64_t ffn,
                                   const Tensor& dgate_up) const {
  constexpr absl::string_view kOp = "SwiGluBackward";
  CheckNonNegative(kOp, "tokens", tokens);
  CheckPositive(kOp, "ffn", ffn);
  CheckTensor(kOp, "dout", dout, Act(), tokens * ffn);
  CheckTensor(kOp, "gate_up", gate_up, Act(), tokens * 2 * ffn);
  CheckTensor(kOp, "dgate_up", dgate_up, Act(), tokens * 2 * ffn);
}

// ---- Cross-entropy -------------------------------------------------------

void BackendChecks::LogitsRowMax(const Tensor& logits, int64_t tokens,
                                 int64_t vocab_rows,
                                 const Tensor& row_max) const {
  constexpr absl::string_view kOp = "LogitsRowMax";
  CheckNonNegative(kOp, "tokens", tokens);
  CheckNonNegative(kOp, "vocab_rows", vocab_rows);
  CheckTensor(kOp, "logits", logits, F32OrAct(), tokens * vocab_rows);
  CheckTensor(kOp, "row_max", row_max, {DType::kF32}, tokens);
}

void BackendChecks::LogitsSumExpAndTarget(const Tensor& logits,
                                          const Tensor& targets,
                                          const Tensor& row_max, int64_t tokens,
                                          int64_t vocab_begin,
                                          int64_t vocab_rows,
                                          const Tensor& stats) const {
  CheckLogitStats("LogitsSumExpAndTarget", logits, targets, row_max, stats,
                  tokens, vocab_begin, vocab_rows);
}

void BackendChecks::CrossEntropyBackward(
    const Tensor& logits, const Tensor& targets, const Tensor& row_max,
    const Tensor& stats, int64_t tokens, int64_t vocab_begin,
    int64_t vocab_rows, const Tensor& loss, const Tensor& dlogits) const {
  constexpr absl::string_view kOp = "CrossEntropyBackward";
  CheckLogitStats(kOp, logits, targets, row_max, stats, tokens, vocab_begin,
                  vocab_rows);
  CheckTensor(kOp, "loss", loss, {DType::kF32}, tokens);
  CheckTensor(kOp, "dlogits", dlogits, F32OrAct(), tokens * vocab_rows);
  if (dlogits.data == logits.data && dlogits.dtype != logits.dtype) {
    Fail(kOp, "dlogits may alias logits only with the same dtype");
  }
}

// ---- AdamW ---------------------------------------------------------------

void BackendChecks::AdamW(const AdamWConfig& config, const Tensor& master,
                          const Tensor& grad, const Tensor& m, const Tensor& v,
                          int64_t n) const {
  constexpr absl::string_view kOp = "AdamW";
  CheckNonNegative(kOp, "n", n);
  CheckPositive(kOp, "config.step", config.step);
  CheckTensor(kOp, "master", master, {DType::kF32}, n);
  CheckTensor(kOp, "grad", grad, {DType::kF32}, n);
  CheckTensor(kOp, "m", m, {DType::kF32}, n);
  CheckTensor(kOp, "v", v, {DType::kF32}, n);
}

}  // namespace tessera::executor
