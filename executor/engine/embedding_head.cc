#include "executor/engine/embedding_head.h"

#include <vector>

#include "core/status_macros.h"
#include "executor/engine/tp_comm.h"

namespace tessera::executor {
namespace {

// Output unit layout (model_shard.cc): final norm [h], then the projection.
Tensor FinalNorm(const LayerContext& ctx, const Tensor& unit) {
  return unit.Slice(0, ctx.hidden());
}
Tensor Projection(const LayerContext& ctx, const Tensor& unit) {
  return unit.Slice(ctx.hidden(), ctx.local_vocab() * ctx.hidden());
}
int64_t VocabBegin(const LayerContext& ctx) {
  return ctx.groups->coords.tp * ctx.local_vocab();
}

}  // namespace

absl::Status EmbeddingForward(const LayerContext& ctx, const Tensor& weights,
                              const Tensor& tokens, const Tensor& x) {
  Backend& be = *ctx.backend;
  const int64_t h = ctx.hidden(), T = ctx.tokens, v = ctx.local_vocab();
  TESSERA_ASSIGN_OR_RETURN(
      DeviceBuffer partial,
      be.Allocate(T * h, be.compute_dtype(), "embedding partial"));
  be.EmbeddingForward(tokens, weights.Slice(0, v * h), T, VocabBegin(ctx), v, h,
                      partial.view());
  DeviceBuffer scattered;
  TESSERA_ASSIGN_OR_RETURN(Tensor rows,
                           ReduceRows(ctx, partial.view(), &scattered));
  be.Copy(rows, x, ctx.rows * h);
  return absl::OkStatus();
}

absl::Status EmbeddingBackward(const LayerContext& ctx, const Tensor& grads,
                               const Tensor& tokens, const Tensor& d) {
  const int64_t h = ctx.hidden(), v = ctx.local_vocab();
  DeviceBuffer gathered;
  TESSERA_ASSIGN_OR_RETURN(Tensor d_full, GatherRows(ctx, d, &gathered));
  ctx.backend->EmbeddingBackward(tokens, d_full, ctx.tokens, VocabBegin(ctx), v,
                                 h, grads.Slice(0, v * h));
  return absl::OkStatus();
}

absl::StatusOr<double> OutputForward(const LayerContext& ctx,
                                     const Tensor& weights, const Tensor& x,
                                     const Tensor& targets, float grad_scale,
                                     HeadSaved* saved) {
  Backend& be = *ctx.backend;
  Communicator& tp = *ctx.groups->tp;
  const DType act = be.compute_dtype();
  const int64_t h = ctx.hidden(), T = ctx.tokens, v = ctx.local_vocab();
  TESSERA_ASSIGN_OR_RETURN(saved->rstd,
                           be.Allocate(ctx.rows, DType::kF32, "final rstd"));
  TESSERA_ASSIGN_OR_RETURN(saved->ln,
                           be.Allocate(ctx.rows * h, act, "final ln"));
  be.RmsNormForward(x, FinalNorm(ctx, weights), ctx.rows, h,
                    static_cast<float>(ctx.model->norm_eps), saved->ln.view(),
                    saved->rstd.view());
  DeviceBuffer gathered;
  TESSERA_ASSIGN_OR_RETURN(Tensor ln_full,
                           GatherRows(ctx, saved->ln.view(), &gathered));
  // Logits in f32 for the softmax (as Megatron's vocab-parallel loss).
  TESSERA_ASSIGN_OR_RETURN(DeviceBuffer logits,
                           be.Allocate(T * v, DType::kF32, "logits"));
  be.Gemm(false, true, T, v, h, 1.0f, ln_full, Projection(ctx, weights), 0.0f,
          logits.view());
  gathered.Reset();
  TESSERA_ASSIGN_OR_RETURN(DeviceBuffer row_max,
                           be.Allocate(T, DType::kF32, "logits max"));
  be.LogitsRowMax(logits.view(), T, v, row_max.view());
  if (tp.size() > 1) {
    TESSERA_RETURN_IF_ERROR(
        tp.AllReduce(row_max.view(), row_max.view(), ReduceOp::kMax));
  }
  TESSERA_ASSIGN_OR_RETURN(DeviceBuffer stats,
                           be.Allocate(2 * T, DType::kF32, "softmax stats"));
  be.LogitsSumExpAndTarget(logits.view(), targets, row_max.view(), T,
                           VocabBegin(ctx), v, stats.view());
  if (tp.size() > 1) {
    TESSERA_RETURN_IF_ERROR(
        tp.AllReduce(stats.view(), stats.view(), ReduceOp::kSum));
  }
  TESSERA_ASSIGN_OR_RETURN(DeviceBuffer loss,
                           be.Allocate(T, DType::kF32, "token loss"));
  if (act == DType::kF32) {
    saved->dlogits = std::move(logits);  // the gradient overwrites the logits
  } else {
    TESSERA_ASSIGN_OR_RETURN(saved->dlogits,
                             be.Allocate(T * v, act, "dlogits"));
  }
  const Tensor logits_view =
      act == DType::kF32 ? saved->dlogits.view() : logits.view();
  be.CrossEntropyBackward(logits_view, targets, row_max.view(), stats.view(), T,
                          VocabBegin(ctx), v, grad_scale, loss.view(),
                          saved->dlogits.view());
  std::vector<float> host(T);
  be.CopyToHost(loss.view(), host.data());
  double sum = 0;
  for (float l : host) sum += l;
  return sum;
}

absl::Status OutputBackward(const LayerContext& ctx, const Tensor& weights,
                            const Tensor& grads, const Tensor& x,
                            HeadSaved* saved, const Tensor& d) {
  Backend& be = *ctx.backend;
  const int64_t h = ctx.hidden(), T = ctx.tokens, v = ctx.local_vocab();
  DeviceBuffer gathered, scattered;
  TESSERA_ASSIGN_OR_RETURN(Tensor ln_full,
                           GatherRows(ctx, saved->ln.view(), &gathered));
  be.Gemm(true, false, v, h, T, 1.0f, saved->dlogits.view(), ln_full, 1.0f,
          Projection(ctx, grads));
  gathered.Reset();
  TESSERA_ASSIGN_OR_RETURN(
      DeviceBuffer d_ln, be.Allocate(T * h, be.compute_dtype(), "d final ln"));
  be.Gemm(false, false, T, h, v, 1.0f, saved->dlogits.view(),
          Projection(ctx, weights), 0.0f, d_ln.view());
  saved->dlogits.Reset();
  TESSERA_ASSIGN_OR_RETURN(Tensor d_ln_rows,
                           ReduceRows(ctx, d_ln.view(), &scattered));
  be.Fill(d, ctx.rows * h, 0.0f);
  be.RmsNormBackward(d_ln_rows, x, FinalNorm(ctx, weights), saved->rstd.view(),
                     ctx.rows, h, d, FinalNorm(ctx, grads));
  *saved = HeadSaved{};
  return absl::OkStatus();
}

}  // namespace tessera::executor
