// Model FLOPs of training: what MFU is measured against, the same for the
// planner's predictions and the executor's measurements.
//
// Per token, forward: 2 FLOPs per weight of every matrix the token goes
// through (attention q/k/v/o, MLP, output projection; the input embedding is a
// lookup), plus attention scores and values: 2 * 2 * seq_len * (heads *
// head_dim) per layer (QK^T and PV over the full sequence, causal masking not
// discounted, as Megatron-LM and the PaLM MFU definition count it). Training =
// forward + backward = 3 x forward (Kaplan et al. 2020; Chowdhery et al. 2022,
// App. B): 6 * matmul_params + 12 * layers * seq_len * heads * head_dim.
// Recomputation is not model FLOPs (see HardwareFlopsPerStep).
//
//   double f = ModelFlopsPerStep(*ModelPreset("llama3-8b"), 512, 8192);
#pragma once

#include <cstdint>

#include "core/layout.h"
#include "core/model.h"

namespace tessera {

// Weights that take part in matrix multiplies per token: every layer's
// attention and MLP matrices and the output projection (counted even when
// tied to the embedding).
int64_t MatmulParams(const ModelConfig& model);

// Forward FLOPs of one token of a seq_len-token sequence.
double ForwardFlopsPerToken(const ModelConfig& model, int64_t seq_len);

// Model FLOPs (forward + backward, no recomputation) of one optimizer step of
// global_batch sequences of seq_len tokens.
double ModelFlopsPerStep(const ModelConfig& model, int64_t global_batch,
                         int64_t seq_len);

// FLOPs actually executed with `recompute`: full recomputation re-runs every
// layer's forward (not the output head), selective re-runs the attention
// scores and values.
double HardwareFlopsPerStep(const ModelConfig& model, int64_t global_batch,
                            int64_t seq_len, Recompute recompute);

}  // namespace tessera
