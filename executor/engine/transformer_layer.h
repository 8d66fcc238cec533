// One Llama decoder layer under tensor, sequence and context parallelism, as a
// paired forward/backward:
//   x_mid = x + Wo(attention(rope(Wqkv(rmsnorm(x)))))
//   x_out = x_mid + W_down(swiglu(W_gate_up(rmsnorm(x_mid))))
// QKV and gate/up are column-parallel, Wo and W_down row-parallel (Megatron),
// with the tp_comm.h operators between them and ring attention over cp.
//
// Activation recomputation decides what LayerSaved keeps for the backward:
//   none       every activation below
//   selective  all but the attention core's output and lse, which backward
//              recomputes from the saved q, k, v (flash-style attention stores
//              no s x s matrix, so the core's output is what there is to drop)
//   full       nothing; backward re-runs the whole forward from x
#pragma once

#include "absl/status/status.h"
#include "executor/engine/layer_context.h"
#include "executor/engine/model_shard.h"

namespace tessera::executor {

// Activations of one layer and one micro-batch kept for its backward.
struct LayerSaved {
  DeviceBuffer rstd1;  // f32 [rows]
  DeviceBuffer ln1;    // act [rows, h]
  DeviceBuffer q, k,
      v;  // act [tokens, heads*hd], [tokens, kv_heads*hd] (roped)
  DeviceBuffer attn_out;  // act [tokens, heads*hd]
  DeviceBuffer lse;       // f32 [micro_batch, heads, seq_local]
  DeviceBuffer x_mid;     // act [rows, h]
  DeviceBuffer rstd2;     // f32 [rows]
  DeviceBuffer ln2;       // act [rows, h]
  DeviceBuffer gate_up;   // act [tokens, 2*ffn]
  DeviceBuffer mlp_act;   // act [tokens, ffn]
};

// Runs the layer on x ([rows, h], act) into x_out ([rows, h]); fills *saved
// according to the layout's recompute mode. `weights` is the unit's compute
// buffer.
absl::Status LayerForward(const LayerContext& ctx, const Tensor& weights,
                          const LayerOffsets& offsets, const Tensor& x,
                          const Tensor& x_out, LayerSaved* saved);

// Backward of the layer: d holds dL/dx_out on entry and dL/dx on return
// ([rows, h], act); weight gradients are added into `grads` (f32, the unit's
// layout). Recomputes what *saved lacks, and empties *saved.
absl::Status LayerBackward(const LayerContext& ctx, const Tensor& weights,
                           const LayerOffsets& offsets, const Tensor& grads,
                           const Tensor& x, LayerSaved* saved, const Tensor& d);

}  // namespace tessera::executor
