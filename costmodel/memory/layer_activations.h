// Activation memory of one transformer layer: the tensors it keeps from its
// forward to its backward pass, as its training stack's policy lists them
// (costmodel/stacks: SavedTensor), generalising Korthikanti et al. 2022
// ("Reducing Activation Recomputation in Large Transformer Models", Section
// 4) from GPT to Llama and from one policy to each stack's.
//
// Per token of the micro-batch on this GPU (s/cp tokens of b sequences),
// 2-byte elements unless said otherwise; "replicated" tensors are divided by
// tp only with sequence parallelism, the others always:
//   replicated  layer_input h, attn_norm_out h, attn_residual h,
//               mlp_norm_out h; dropout_masks 2h bytes (two 1-byte masks)
//   split       q h, k kv_dim, v kv_dim, attn_out h (+ a 4-byte log-sum-exp
//               per head), mlp_gate ffn (SwiGLU), mlp_up ffn, mlp_act ffn
//               (unfused SwiGLU only), mlp_down_in ffn
//   unsplit     mlp_out h (the down projection's partial sums before the
//               tensor-parallel reduction)
//   scores      attn_scores: heads/tp x s keys per query, 2 bytes (softmax)
//               or 5 with GPT's attention dropout (+ mask 1 + output 2)
// Korthikanti's GPT layer, s*b*h*(34 + 5*a*s/h), is the megatron-2021 stack's
// list: replicated 10sbh, split 24sbh (fc1 and GELU outputs 8sbh each),
// scores 5as^2b. With fp8 and a stack that keeps its linear layers' inputs
// in fp8 (Transformer Engine), attn_norm_out, attn_out, mlp_norm_out and
// mlp_down_in take 1 byte per element.
//
// Recomputation: none keeps the stack's `saved` list; selective keeps the
// stack's `selective_recompute.saved` list, or (layer policies) recomputes a
// fraction of the layers in full; full keeps only the layer input (2sbh, /tp
// with sequence parallelism), plus one layer's whole set while it
// recomputes. Every figure is scaled by the calibrated
// saved_activation_factor (temporaries eager kernels keep).
//
//   double per_layer = LayerActivationBytes(model, shard, stack,
//                                           Recompute::kSelective, c);
#pragma once

#include "core/layout.h"
#include "core/model.h"
#include "costmodel/calibration/calibration.h"
#include "core/layer_shard.h"
#include "costmodel/stacks/training_stack.h"

namespace tessera::costmodel {

// Bytes of `tensor` for one layer and one micro-batch on this GPU (unscaled).
double SavedTensorBytes(SavedTensor tensor, const ModelConfig& model,
                        const LayerShard& shard, const TrainingStack& stack);

// Bytes one layer keeps per micro-batch from its forward to its backward
// under `recompute` (averaged over the layers for layer-fraction policies).
double LayerActivationBytes(const ModelConfig& model, const LayerShard& shard,
                            const TrainingStack& stack, Recompute recompute,
                            const Calibration& calibration);

// Bytes one layer re-materialises while its backward recomputes what it
// dropped: its whole set less what it kept (the whole set less the input for
// full recomputation and layer policies; nothing for Megatron's attention
// core under flash attention, which drops nothing); 0 without
// recomputation. Held for one layer at a time, on top of the saved ones.
double LayerRecomputeExtraBytes(const ModelConfig& model,
                                const LayerShard& shard,
                                const TrainingStack& stack,
                                Recompute recompute,
                                const Calibration& calibration);

// Bytes of one layer's whole set (what a layer holds while it runs or is
// recomputed): LayerActivationBytes with no recomputation.
double LayerWorkingSetBytes(const ModelConfig& model, const LayerShard& shard,
                            const TrainingStack& stack,
                            const Calibration& calibration);

// Bytes of the layer's activations as fused kernels read and write them
// (the fused list, bf16): the reference the element-wise traffic is a
// multiple of (compute/compute_time.h), the same for every stack.
double LayerElementwiseReferenceBytes(const ModelConfig& model,
                                      const LayerShard& shard);

// Bytes of the loss's working set on the last stage: logits_bytes_per_element
// per logit of the micro-batch's tokens over the tp-split vocabulary.
double LogitsWorkingSetBytes(const ModelConfig& model, const LayerShard& shard,
                             const Calibration& calibration);

}  // namespace tessera::costmodel
