// Which blocks of the model each pipeline rank holds, as the training stack
// splits them (training_stack.h PipelineSplit):
//   even          core's StageLayers: layers / (pp * vpp) per chunk, the
//                 ends one fewer when that does not divide; the embedding on
//                 rank 0, the output layer and loss on rank pp - 1.
//   embedding and loss as layers (Megatron-Core's account-for-* flags): the
//                 same over layers + 2, the first chunk's first slot the
//                 embedding and the last chunk's last the loss, so those
//                 chunks hold one layer fewer (none when a chunk is one slot:
//                 Llama 3 405B's 126 layers on pp 16 x vpp 8 = 128 chunks).
//   cumulative cost (nanotron, vpp 1): the blocks embedding (cost 0), each
//                 layer (4 h heads*d_head + 3 h ffn), final norm (0), output
//                 layer (V h), fp32 cast and loss (0) in order; a block goes
//                 to the current rank, which moves on once the cumulative
//                 cost exceeds (rank + 1) / pp of the total. With the output
//                 layer worth several layers, the early ranks hold more
//                 layers; ranks after the loss's hold nothing.
// Hand example, nanotron 1B (16 layers, h 2048, ffn 8192, V 131072): a layer
// costs 2^26, the output layer 2^28 = 4 layers, the total 20 layers; with
// pp 2 the threshold is 10 layers' cost, crossed by the 11th layer, so rank
// 0 holds the embedding and 11 layers, rank 1 5 layers and the head.
//
//   StageBlocks b = StageBlocksOf(model, layout, stack.pipeline_split, 0);
#pragma once

#include <cstdint>

#include "core/layout.h"
#include "core/model.h"
#include "costmodel/stacks/training_stack.h"

namespace tessera::costmodel {

// What one pipeline rank holds, over all its chunks.
struct StageBlocks {
  int64_t layers = 0;
  bool embedding = false;  // the input embedding
  bool head = false;       // the final norm, output layer and loss
};

// Rank `stage` (0..pp-1) of a resolved layout.
StageBlocks StageBlocksOf(const ModelConfig& model, const Layout& layout,
                          PipelineSplit split, int64_t stage);

// The rank that holds the output layer and the loss.
int64_t HeadStage(const ModelConfig& model, const Layout& layout,
                  PipelineSplit split);

// Ranks that hold any block (the pipeline's real depth): pp but for a
// cumulative-cost split whose loss lands before the last rank.
int64_t ActiveStages(const ModelConfig& model, const Layout& layout,
                     PipelineSplit split);

// Blocks besides the layers that a split may give a rank of their own: how
// far pp (and pp * vpp) may exceed the layers (even 0; embedding and loss
// 2; cumulative cost any: nanotron runs ranks that hold nothing).
int64_t PipelineBlocksBesidesLayers(PipelineSplit split);

}  // namespace tessera::costmodel
