#include "costmodel/pipeline/stage_params.h"

#include "costmodel/pipeline/stage_split.h"

namespace tessera::costmodel {

StageParams StageParamsPerGpu(const ModelConfig& m, const Layout& layout,
                              int64_t stage) {
  return StageParamsPerGpu(m, layout, PipelineSplit::kEven, stage);
}

StageParams StageParamsPerGpu(const ModelConfig& m, const Layout& layout,
                              PipelineSplit split, int64_t stage) {
  StageParams s;
  const StageBlocks blocks = StageBlocksOf(m, layout, split, stage);
  s.layers = blocks.layers;
  const double tp = static_cast<double>(layout.tp);
  s.first = blocks.embedding;
  s.last = blocks.head;
  s.layer_params = static_cast<double>(m.ParamsPerLayer()) / tp;
  if (s.first) s.embedding_params = m.EmbeddingParams() / tp;
  if (s.last) {
    // Untied: output projection + final norm. Tied: only the final norm when
    // the embedding is already here, else a copy of it (Megatron-LM).
    const bool needs_copy = m.tie_embeddings && !s.first;
    s.output_params =
        (static_cast<double>(m.OutputParams()) +
         (needs_copy ? static_cast<double>(m.EmbeddingParams()) : 0)) /
        tp;
  }
  s.params = static_cast<double>(s.layers) * s.layer_params +
             s.embedding_params + s.output_params;
  return s;
}

}  // namespace tessera::costmodel
