#include "executor/engine/transformer_layer.h"

#include "core/status_macros.h"
#include "executor/engine/ring_attention.h"
#include "executor/engine/tp_comm.h"

namespace tessera::executor {
namespace {

// The layer's weight views inside a unit buffer (weights or gradients).
struct LayerViews {
  Tensor attn_norm, wqkv, wo, mlp_norm, w_gate_up, w_down;
};

LayerViews Views(const LayerContext& ctx, const Tensor& unit,
                 const LayerOffsets& off) {
  const int64_t h = ctx.hidden(), hd = ctx.head_dim();
  const int64_t qkv_rows = (ctx.local_heads() + 2 * ctx.local_kv_heads()) * hd;
  const int64_t q_cols = ctx.local_heads() * hd, ffn = ctx.local_ffn();
  return LayerViews{unit.Slice(off.attn_norm, h),
                    unit.Slice(off.wqkv, qkv_rows * h),
                    unit.Slice(off.wo, h * q_cols),
                    unit.Slice(off.mlp_norm, h),
                    unit.Slice(off.w_gate_up, 2 * ffn * h),
                    unit.Slice(off.w_down, h * ffn)};
}

absl::StatusOr<DeviceBuffer> Alloc(const LayerContext& ctx, int64_t numel,
                                   DType dtype, const char* what) {
  return ctx.backend->Allocate(numel, dtype, what);
}

// The forward pass, keeping every activation in *s; x_out receives the output.
absl::Status ForwardKeepAll(const LayerContext& ctx, const LayerViews& w,
                            const Tensor& x, const Tensor& x_out,
                            LayerSaved* s) {
  Backend& be = *ctx.backend;
  const DType act = be.compute_dtype();
  const int64_t h = ctx.hidden(), hd = ctx.head_dim(), T = ctx.tokens,
                rows = ctx.rows;
  const int64_t hq = ctx.local_heads(), hkv = ctx.local_kv_heads();
  const int64_t q_cols = hq * hd, kv_cols = hkv * hd;
  const int64_t qkv_cols = q_cols + 2 * kv_cols, ffn = ctx.local_ffn();
  const float eps = static_cast<float>(ctx.model->norm_eps);

  // Attention block.
  TESSERA_ASSIGN_OR_RETURN(s->rstd1, Alloc(ctx, rows, DType::kF32, "rstd1"));
  TESSERA_ASSIGN_OR_RETURN(s->ln1, Alloc(ctx, rows * h, act, "ln1"));
  be.RmsNormForward(x, w.attn_norm, rows, h, eps, s->ln1.view(),
                    s->rstd1.view());
  DeviceBuffer gathered;
  TESSERA_ASSIGN_OR_RETURN(Tensor ln1_full,
                           GatherRows(ctx, s->ln1.view(), &gathered));
  {
    TESSERA_ASSIGN_OR_RETURN(DeviceBuffer qkv,
                             Alloc(ctx, T * qkv_cols, act, "qkv"));
    be.Gemm(false, true, T, qkv_cols, h, 1.0f, ln1_full, w.wqkv, 0.0f,
            qkv.view());
    gathered.Reset();
    TESSERA_ASSIGN_OR_RETURN(s->q, Alloc(ctx, T * q_cols, act, "q"));
    TESSERA_ASSIGN_OR_RETURN(s->k, Alloc(ctx, T * kv_cols, act, "k"));
    TESSERA_ASSIGN_OR_RETURN(s->v, Alloc(ctx, T * kv_cols, act, "v"));
    be.RopeQkvForward(qkv.view(), ctx.token_positions.view(), T, hq, hkv, hd,
                      static_cast<float>(ctx.model->rope_theta), s->q.view(),
                      s->k.view(), s->v.view());
  }
  TESSERA_ASSIGN_OR_RETURN(s->attn_out, Alloc(ctx, T * q_cols, act, "attn"));
  TESSERA_ASSIGN_OR_RETURN(s->lse,
                           Alloc(ctx, T * hq, DType::kF32, "attention lse"));
  TESSERA_RETURN_IF_ERROR(RingAttentionForward(ctx, s->q.view(), s->k.view(),
                                               s->v.view(), s->attn_out.view(),
                                               s->lse.view()));
  {
    TESSERA_ASSIGN_OR_RETURN(DeviceBuffer o,
                             Alloc(ctx, T * h, act, "attn proj"));
    be.Gemm(false, true, T, h, q_cols, 1.0f, s->attn_out.view(), w.wo, 0.0f,
            o.view());
    DeviceBuffer scattered;
    TESSERA_ASSIGN_OR_RETURN(Tensor o_rows,
                             ReduceRows(ctx, o.view(), &scattered));
    TESSERA_ASSIGN_OR_RETURN(s->x_mid, Alloc(ctx, rows * h, act, "x_mid"));
    be.Add(x, o_rows, s->x_mid.view(), rows * h);
  }

  // MLP block.
  TESSERA_ASSIGN_OR_RETURN(s->rstd2, Alloc(ctx, rows, DType::kF32, "rstd2"));
  TESSERA_ASSIGN_OR_RETURN(s->ln2, Alloc(ctx, rows * h, act, "ln2"));
  be.RmsNormForward(s->x_mid.view(), w.mlp_norm, rows, h, eps, s->ln2.view(),
                    s->rstd2.view());
  TESSERA_ASSIGN_OR_RETURN(Tensor ln2_full,
                           GatherRows(ctx, s->ln2.view(), &gathered));
  TESSERA_ASSIGN_OR_RETURN(s->gate_up, Alloc(ctx, T * 2 * ffn, act, "gate_up"));
  be.Gemm(false, true, T, 2 * ffn, h, 1.0f, ln2_full, w.w_gate_up, 0.0f,
          s->gate_up.view());
  gathered.Reset();
  TESSERA_ASSIGN_OR_RETURN(s->mlp_act, Alloc(ctx, T * ffn, act, "swiglu"));
  be.SwiGluForward(s->gate_up.view(), T, ffn, s->mlp_act.view());
  TESSERA_ASSIGN_OR_RETURN(DeviceBuffer down,
                           Alloc(ctx, T * h, act, "mlp out"));
  be.Gemm(false, true, T, h, ffn, 1.0f, s->mlp_act.view(), w.w_down, 0.0f,
          down.view());
  DeviceBuffer scattered;
  TESSERA_ASSIGN_OR_RETURN(Tensor down_rows,
                           ReduceRows(ctx, down.view(), &scattered));
  be.Add(s->x_mid.view(), down_rows, x_out, rows * h);
  return absl::OkStatus();
}

}  // namespace

absl::Status LayerForward(const LayerContext& ctx, const Tensor& weights,
                          const LayerOffsets& offsets, const Tensor& x,
                          const Tensor& x_out, LayerSaved* saved) {
  TESSERA_RETURN_IF_ERROR(
      ForwardKeepAll(ctx, Views(ctx, weights, offsets), x, x_out, saved));
  switch (ctx.layout->recompute) {
    case Recompute::kNone:
      break;
    case Recompute::kSelective:
      saved->attn_out.Reset();
      saved->lse.Reset();
      break;
    case Recompute::kFull:
      *saved = LayerSaved{};
      break;
  }
  return absl::OkStatus();
}

absl::Status LayerBackward(const LayerContext& ctx, const Tensor& weights,
                           const LayerOffsets& offsets, const Tensor& grads,
                           const Tensor& x, LayerSaved* saved,
                           const Tensor& d) {
  Backend& be = *ctx.backend;
  const DType act = be.compute_dtype();
  const LayerViews w = Views(ctx, weights, offsets);
  const LayerViews g = Views(ctx, grads, offsets);
  const int64_t h = ctx.hidden(), hd = ctx.head_dim(), T = ctx.tokens,
                rows = ctx.rows;
  const int64_t hq = ctx.local_heads(), hkv = ctx.local_kv_heads();
  const int64_t q_cols = hq * hd, kv_cols = hkv * hd;
  const int64_t qkv_cols = q_cols + 2 * kv_cols, ffn = ctx.local_ffn();
  LayerSaved& s = *saved;

  if (s.x_mid.empty()) {  // full recomputation: rebuild every activation
    TESSERA_ASSIGN_OR_RETURN(DeviceBuffer x_out,
                             Alloc(ctx, rows * h, act, "recomputed x_out"));
    TESSERA_RETURN_IF_ERROR(ForwardKeepAll(ctx, w, x, x_out.view(), &s));
  } else if (s.attn_out.empty()) {  // selective: rebuild the attention core
    TESSERA_ASSIGN_OR_RETURN(s.attn_out, Alloc(ctx, T * q_cols, act, "attn"));
    TESSERA_ASSIGN_OR_RETURN(s.lse, Alloc(ctx, T * hq, DType::kF32, "lse"));
    TESSERA_RETURN_IF_ERROR(RingAttentionForward(ctx, s.q.view(), s.k.view(),
                                                 s.v.view(), s.attn_out.view(),
                                                 s.lse.view()));
  }

  // MLP block: d = dL/dx_out.
  {
    DeviceBuffer gathered, gathered_ln2, scattered;
    TESSERA_ASSIGN_OR_RETURN(Tensor d_full, GatherRows(ctx, d, &gathered));
    TESSERA_ASSIGN_OR_RETURN(DeviceBuffer d_act,
                             Alloc(ctx, T * ffn, act, "d_act"));
    be.Gemm(false, false, T, ffn, h, 1.0f, d_full, w.w_down, 0.0f,
            d_act.view());
    be.Gemm(true, false, h, ffn, T, 1.0f, d_full, s.mlp_act.view(), 1.0f,
            g.w_down);
    gathered.Reset();
    TESSERA_ASSIGN_OR_RETURN(DeviceBuffer d_gu,
                             Alloc(ctx, T * 2 * ffn, act, "d_gate_up"));
    be.SwiGluBackward(d_act.view(), s.gate_up.view(), T, ffn, d_gu.view());
    d_act.Reset();
    TESSERA_ASSIGN_OR_RETURN(Tensor ln2_full,
                             GatherRows(ctx, s.ln2.view(), &gathered_ln2));
    be.Gemm(true, false, 2 * ffn, h, T, 1.0f, d_gu.view(), ln2_full, 1.0f,
            g.w_gate_up);
    gathered_ln2.Reset();
    TESSERA_ASSIGN_OR_RETURN(DeviceBuffer d_ln2,
                             Alloc(ctx, T * h, act, "d_ln2"));
    be.Gemm(false, false, T, h, 2 * ffn, 1.0f, d_gu.view(), w.w_gate_up, 0.0f,
            d_ln2.view());
    TESSERA_ASSIGN_OR_RETURN(Tensor d_ln2_rows,
                             ReduceRows(ctx, d_ln2.view(), &scattered));
    // d becomes dL/dx_mid: the residual path plus the norm's input gradient.
    be.RmsNormBackward(d_ln2_rows, s.x_mid.view(), w.mlp_norm, s.rstd2.view(),
                       rows, h, d, g.mlp_norm);
  }
  s.gate_up.Reset();
  s.mlp_act.Reset();
  s.ln2.Reset();
  s.rstd2.Reset();
  s.x_mid.Reset();

  // Attention block: d = dL/dx_mid.
  {
    DeviceBuffer gathered, gathered_ln1, scattered;
    TESSERA_ASSIGN_OR_RETURN(Tensor d_full, GatherRows(ctx, d, &gathered));
    TESSERA_ASSIGN_OR_RETURN(DeviceBuffer d_attn,
                             Alloc(ctx, T * q_cols, act, "d_attn"));
    be.Gemm(false, false, T, q_cols, h, 1.0f, d_full, w.wo, 0.0f,
            d_attn.view());
    be.Gemm(true, false, h, q_cols, T, 1.0f, d_full, s.attn_out.view(), 1.0f,
            g.wo);
    gathered.Reset();
    // Ring attention adds each key block's gradients in f32; without
    // context parallelism the one block writes them, in act.
    const DType grad_type = ctx.groups->cp->size() == 1 ? act : DType::kF32;
    TESSERA_ASSIGN_OR_RETURN(DeviceBuffer dq,
                             Alloc(ctx, T * q_cols, grad_type, "dq"));
    TESSERA_ASSIGN_OR_RETURN(DeviceBuffer dk,
                             Alloc(ctx, T * kv_cols, grad_type, "dk"));
    TESSERA_ASSIGN_OR_RETURN(DeviceBuffer dv,
                             Alloc(ctx, T * kv_cols, grad_type, "dv"));
    TESSERA_RETURN_IF_ERROR(RingAttentionBackward(
        ctx, d_attn.view(), s.q.view(), s.k.view(), s.v.view(),
        s.attn_out.view(), s.lse.view(), dq.view(), dk.view(), dv.view()));
    d_attn.Reset();
    s.attn_out.Reset();
    s.lse.Reset();
    s.q.Reset();
    s.k.Reset();
    s.v.Reset();
    TESSERA_ASSIGN_OR_RETURN(DeviceBuffer dqkv,
                             Alloc(ctx, T * qkv_cols, act, "dqkv"));
    be.RopeQkvBackward(dq.view(), dk.view(), dv.view(),
                       ctx.token_positions.view(), T, hq, hkv, hd,
                       static_cast<float>(ctx.model->rope_theta), dqkv.view());
    dq.Reset();
    dk.Reset();
    dv.Reset();
    TESSERA_ASSIGN_OR_RETURN(Tensor ln1_full,
                             GatherRows(ctx, s.ln1.view(), &gathered_ln1));
    be.Gemm(true, false, qkv_cols, h, T, 1.0f, dqkv.view(), ln1_full, 1.0f,
            g.wqkv);
    gathered_ln1.Reset();
    TESSERA_ASSIGN_OR_RETURN(DeviceBuffer d_ln1,
                             Alloc(ctx, T * h, act, "d_ln1"));
    be.Gemm(false, false, T, h, qkv_cols, 1.0f, dqkv.view(), w.wqkv, 0.0f,
            d_ln1.view());
    TESSERA_ASSIGN_OR_RETURN(Tensor d_ln1_rows,
                             ReduceRows(ctx, d_ln1.view(), &scattered));
    be.RmsNormBackward(d_ln1_rows, x, w.attn_norm, s.rstd1.view(), rows, h, d,
                       g.attn_norm);
  }
  *saved = LayerSaved{};
  return absl::OkStatus();
}

}  // namespace tessera::executor
