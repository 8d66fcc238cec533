// What one pipeline rank holds of the model: its layers (over every virtual
// chunk, core's StageLayers assignment: uneven stages are lighter at the
// ends) and its parameters per tensor-parallel
// rank. The first stage holds the input embedding, the last the final norm and
// the output projection (with tied embeddings and pp > 1, a copy of the
// embedding, as Megatron-LM keeps it). Parameters divide by tp; the few
// replicated norm weights are divided too (an approximation below 0.01%).
//
//   StageParams s = StageParamsPerGpu(model, layout, /*stage=*/0);
#pragma once

#include <cstdint>

#include "core/layout.h"
#include "core/model.h"

namespace tessera::planner {

struct StageParams {
  int64_t layers = 0;           // transformer layers on this rank
  double params = 0;            // parameters per GPU (after tp)
  double layer_params = 0;      // one transformer layer's, per GPU
  double embedding_params = 0;  // input embedding, per GPU (first stage)
  double output_params = 0;     // output projection and final norm, per GPU
                                // (last stage)
  bool first = false;           // holds the input embedding
  bool last = false;            // computes the logits and the loss
};

// `stage` in [0, layout.pp).
StageParams StageParamsPerGpu(const ModelConfig& model, const Layout& layout,
                              int64_t stage);

}  // namespace tessera::planner
