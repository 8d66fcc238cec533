// Activation memory of one transformer layer (Korthikanti et al. 2022,
// "Reducing Activation Recomputation in Large Transformer Models", Section 4),
// generalised from GPT to Llama.
//
// Per layer, for s tokens, micro-batch b, hidden h, a heads, 2-byte elements,
// the paper's GPT layer stores s*b*h*(34 + 5*a*s/h) bytes:
//   replicated on every tensor-parallel rank without sequence parallelism:
//     2 norms' inputs 4sbh, QKV input 2sbh, MLP input 2sbh, 2 dropout masks
//     2sbh (10sbh);
//   split by tp: Q 2sbh, K and V 4sbh, projection input 2sbh, MLP 16sbh
//     (fc1 output and GELU output, 2 * 2*s*b*4h) (24sbh);
//   attention scores, split by tp: softmax 2as^2b, dropout mask as^2b and
//     output 2as^2b (5as^2b).
// Llama (SwiGLU, GQA, RMSNorm, no dropout) changes three terms: no dropout
// masks (replicated part 8sbh); K and V are 2*s*b*kv_dim each; the MLP keeps
// gate and up outputs and the down projection's input, 3 * 2*s*b*ffn
// (Megatron's fused SwiGLU recomputes SiLU in backward); the scores keep only
// the softmax output, 2as^2b.
// With sequence parallelism everything divides by tp. Selective recomputation
// drops the scores. Full recomputation keeps each layer's input, 2sbh (/tp with
// sequence parallelism), plus one layer's working set while it recomputes.
// With context parallelism each rank holds s/cp tokens, and its scores cover
// its s/cp queries against all s keys.
//
//   double per_layer = LayerActivationBytes(model, shard,
//   Recompute::kSelective);
#pragma once

#include "core/layout.h"
#include "core/model.h"
#include "planner/layer_shard.h"

namespace tessera::planner {

// Bytes one layer keeps per micro-batch from its forward to its backward.
double LayerActivationBytes(const ModelConfig& model, const LayerShard& shard,
                            Recompute recompute);

// Bytes of one layer's full activation set (what a layer holds while it runs
// or is recomputed): LayerActivationBytes with no recomputation.
double LayerWorkingSetBytes(const ModelConfig& model, const LayerShard& shard);

// Bytes of the output layer's logits kept for the loss on the last stage: fp32
// logits of the micro-batch's tokens over the tp-split vocabulary, 4*s*b*V/tp.
double LogitsActivationBytes(const ModelConfig& model, const LayerShard& shard);

}  // namespace tessera::planner
