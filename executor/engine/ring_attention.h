// Causal attention over a sequence split across the context-parallel group:
// ring attention (Liu et al. 2023). Each rank keeps its queries and passes
// key/value blocks around the ring, merging each block's contribution by
// log-sum-exp; in backward the key/value blocks travel again together with
// their gradient accumulators, which arrive back at their owner after a full
// turn. With cp == 1 these are a single attention call.
//
//   TESSERA_RETURN_IF_ERROR(RingAttentionForward(ctx, q, k, v, out, lse));
#pragma once

#include "absl/status/status.h"
#include "executor/engine/layer_context.h"

namespace tessera::executor {

// q: act [tokens, local_heads*hd]; k, v: act [tokens, local_kv_heads*hd] (this
// rank's tokens); writes out (act [tokens, local_heads*hd]) and lse (f32
// [micro_batch, local_heads, seq_local]).
absl::Status RingAttentionForward(const LayerContext& ctx, const Tensor& q,
                                  const Tensor& k, const Tensor& v,
                                  const Tensor& out, const Tensor& lse);

// Writes dq (f32 [tokens, local_heads*hd]) and dk, dv (f32 [tokens,
// local_kv_heads*hd]) from dout and the forward's (out, lse).
absl::Status RingAttentionBackward(const LayerContext& ctx, const Tensor& dout,
                                   const Tensor& q, const Tensor& k,
                                   const Tensor& v, const Tensor& out,
                                   const Tensor& lse, const Tensor& dq,
                                   const Tensor& dk, const Tensor& dv);

}  // namespace tessera::executor
