#include "executor/engine/ring_attention.h"

#include <utility>

#include "core/status_macros.h"

namespace tessera::executor {
namespace {

AttentionShape ShapeOf(const LayerContext& ctx) {
  return AttentionShape{
      ctx.tokens / ctx.seq_local, ctx.seq_local,        ctx.seq_local,
      ctx.local_heads(),          ctx.local_kv_heads(), ctx.head_dim()};
}

// Sends `send` to the next cp rank and receives `recv` (same sizes) from the
// previous one, as one group.
absl::Status RingExchange(Communicator& cp, const std::vector<Tensor>& send,
                          const std::vector<Tensor>& recv) {
  const int next = (cp.rank() + 1) % cp.size();
  const int prev = (cp.rank() + cp.size() - 1) % cp.size();
  TESSERA_RETURN_IF_ERROR(cp.GroupStart());
  for (const Tensor& t : send) TESSERA_RETURN_IF_ERROR(cp.Send(t, next));
  for (const Tensor& t : recv) TESSERA_RETURN_IF_ERROR(cp.Recv(t, prev));
  return cp.GroupEnd();
}

}  // namespace

absl::Status RingAttentionForward(const LayerContext& ctx, const Tensor& q,
                                  const Tensor& k, const Tensor& v,
                                  const Tensor& out, const Tensor& lse) {
  Backend& be = *ctx.backend;
  const AttentionShape shape = ShapeOf(ctx);
  Communicator& cp = *ctx.groups->cp;
  const int n = cp.size(), r = cp.rank();
  if (n == 1) {
    AttentionShape self = shape;  // positions 0..seq_local-1
    self.self_causal = true;
    be.AttentionForward(self, q, k, v, ctx.my_positions(), ctx.my_positions(),
                        /*accumulate=*/false, out, lse);
    return absl::OkStatus();
  }
  // Two receive buffers alternate; the block in use is the one received last.
  DeviceBuffer kb[2], vb[2];
  for (int i = 0; i < 2; ++i) {
    TESSERA_ASSIGN_OR_RETURN(kb[i], be.Allocate(k.numel, k.dtype, "ring k"));
    TESSERA_ASSIGN_OR_RETURN(vb[i], be.Allocate(v.numel, v.dtype, "ring v"));
  }
  Tensor cur_k = k, cur_v = v;
  for (int step = 0; step < n; ++step) {
    const int src = (r - step + n) % n;
    Tensor next_k, next_v;
    if (step + 1 < n) {
      next_k = kb[step % 2].view();
      next_v = vb[step % 2].view();
      TESSERA_RETURN_IF_ERROR(
          RingExchange(cp, {cur_k, cur_v}, {next_k, next_v}));
    }
    be.AttentionForward(shape, q, cur_k, cur_v, ctx.my_positions(),
                        ctx.cp_positions[src].view(),
                        /*accumulate=*/step > 0, out, lse);
    cur_k = next_k;
    cur_v = next_v;
  }
  return absl::OkStatus();
}

absl::Status RingAttentionBackward(const LayerContext& ctx, const Tensor& dout,
                                   const Tensor& q, const Tensor& k,
                                   const Tensor& v, const Tensor& out,
                                   const Tensor& lse, const Tensor& dq,
                                   const Tensor& dk, const Tensor& dv) {
  Backend& be = *ctx.backend;
  const AttentionShape shape = ShapeOf(ctx);
  Communicator& cp = *ctx.groups->cp;
  const int n = cp.size(), r = cp.rank();
  if (n == 1) {
    // The whole sequence, one block: the backend writes dq, dk, dv.
    AttentionShape self = shape;  // positions 0..seq_local-1
    self.self_causal = true;
    be.AttentionBackward(self, dout, q, k, v, out, lse, ctx.my_positions(),
                         ctx.my_positions(), dq, dk, dv);
    return absl::OkStatus();
  }
  be.Fill(dq, dq.numel, 0.0f);
  // Sets of (k, v, dk, dv) alternate between "in use" and "being received";
  // the first block in use is this rank's own with fresh accumulators.
  DeviceBuffer kb[2], vb[2], dkb[3], dvb[3];
  for (int i = 0; i < 2; ++i) {
    TESSERA_ASSIGN_OR_RETURN(kb[i], be.Allocate(k.numel, k.dtype, "ring k"));
    TESSERA_ASSIGN_OR_RETURN(vb[i], be.Allocate(v.numel, v.dtype, "ring v"));
  }
  for (int i = 0; i < 3; ++i) {
    TESSERA_ASSIGN_OR_RETURN(dkb[i],
                             be.Allocate(dk.numel, DType::kF32, "ring dk"));
    TESSERA_ASSIGN_OR_RETURN(dvb[i],
                             be.Allocate(dv.numel, DType::kF32, "ring dv"));
  }
  Tensor cur_k = k, cur_v = v, cur_dk = dkb[2].view(), cur_dv = dvb[2].view();
  for (int step = 0; step < n; ++step) {
    const int src = (r - step + n) % n;
    be.AttentionBackward(shape, dout, q, cur_k, cur_v, out, lse,
                         ctx.my_positions(), ctx.cp_positions[src].view(), dq,
                         cur_dk, cur_dv);
    if (step + 1 < n) {
      const int slot = step % 2;
      TESSERA_RETURN_IF_ERROR(
          RingExchange(cp, {cur_k, cur_v, cur_dk, cur_dv},
                       {kb[slot].view(), vb[slot].view(), dkb[slot].view(),
                        dvb[slot].view()}));
      cur_k = kb[slot].view();
      cur_v = vb[slot].view();
      cur_dk = dkb[slot].view();
      cur_dv = dvb[slot].view();
    } else {
      // The accumulators in hand belong to the next rank: one more hop home.
      TESSERA_RETURN_IF_ERROR(RingExchange(cp, {cur_dk, cur_dv}, {dk, dv}));
    }
  }
  return absl::OkStatus();
}

}  // namespace tessera::executor
