// What one pipeline rank holds of the model: its layers (over every virtual
// chunk, as the stack splits them: stage_split.h; by default core's
// StageLayers, uneven stages lighter at the ends) and its parameters per
// tensor-parallel rank. The first stage holds the input embedding, the head
// stage (the last, but for nanotron's split) the final norm and the output
// projection (with tied embeddings on another stage, a copy of the
// embedding, as Megatron-LM and nanotron keep it). Parameters divide by tp; the few
// replicated norm weights are divided too (an approximation below 0.01%).
//
//   StageParams s = StageParamsPerGpu(model, layout, /*stage=*/0);
#pragma once

#include <cstdint>

#include "core/layout.h"
#include "core/model.h"
#include "costmodel/stacks/training_stack.h"

namespace tessera::costmodel {

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

// `stage` in [0, layout.pp), split as `split` says.
StageParams StageParamsPerGpu(const ModelConfig& model, const Layout& layout,
                              PipelineSplit split, int64_t stage);
// The even split.
StageParams StageParamsPerGpu(const ModelConfig& model, const Layout& layout,
                              int64_t stage);

}  // namespace tessera::costmodel
