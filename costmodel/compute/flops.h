// Floating-point operations of a decoder-only transformer (Llama: SwiGLU MLP of
// 3 matrices, grouped-query attention; GPT: 4h GELU MLP of 2 matrices), by
// layer part and micro-batch, as the compute model times them. The model
// FLOPs that MFU divides, predicted and measured alike, are core's
// (core/model_flops.h): these parts sum to them (flops_test checks it).
// A multiply-add counts as 2 FLOPs. Causal attention is counted in full
// (QK^T and PV over all s x s positions, masked half included), as Megatron-LM
// and the SC'21 table count it; kernels that skip masked blocks are faster,
// which the compute model's attention efficiency absorbs.
//
//   LayerFlops f = ForwardLayerFlops(model, /*micro_batch=*/1,
//                                    /*seq_len=*/4096);
#pragma once

#include <cstdint>

#include "core/layout.h"
#include "core/model.h"
#include "core/workload.h"

namespace tessera::costmodel {

// Forward FLOPs of one whole (unsplit) layer for a micro-batch.
struct LayerFlops {
  double qkv = 0;             // Q, K, V projections (K, V of kv_heads)
  double attention_core = 0;  // QK^T and PV over every s x s position
  double out_proj = 0;        // attention output projection
  double mlp = 0;             // SwiGLU gate, up, down / GELU up, down

  double gemm() const { return qkv + out_proj + mlp; }
  double total() const { return gemm() + attention_core; }
};

// One layer's forward for `micro_batch` sequences of `seq_len` tokens.
LayerFlops ForwardLayerFlops(const ModelConfig& model, int64_t micro_batch,
                             int64_t seq_len);

// The output (vocabulary) projection's forward for a micro-batch.
double LogitsForwardFlops(const ModelConfig& model, int64_t micro_batch,
                          int64_t seq_len);

// Extra forward FLOPs that recomputation adds per layer per micro-batch: a
// whole forward (full), the attention core (selective), nothing (none).
double RecomputeLayerFlops(const ModelConfig& model, Recompute recompute,
                           int64_t micro_batch, int64_t seq_len);

}  // namespace tessera::costmodel
