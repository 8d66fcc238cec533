// Which parameters one rank holds, as units of flat buffers: the embedding,
// each transformer layer, and the output head (final norm + projection). A unit
// is what FSDP gathers at once and what ZeRO shards; its segments say where
// each weight's tensor-parallel slice lies in the flat buffer and which slice
// of the global weight it is.
//
// Tensor-parallel slices (Megatron): Wq, Wk, Wv, W_gate, W_up by output rows
// (column-parallel); Wo, W_down by input columns (row-parallel); embedding and
// output projection by vocabulary rows; norm weights replicated. In a layer
// unit Wq, Wk, Wv are adjacent (the fused QKV projection [(hq+2hkv)*hd, h])
// and so are W_gate, W_up (the fused [2*ffn, h]).
//
//   ModelShard shard = BuildModelShard(model, layout, coords);
//   for (const ModelChunk& chunk : shard.chunks) ...
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/layout.h"
#include "core/model.h"
#include "executor/engine/parallel_groups.h"

namespace tessera::executor {

// The local slice of one global weight [global_rows x global_cols]:
// rows [row_begin, row_end) x cols [col_begin, col_end), stored row-major at
// `offset` elements into its unit.
struct ParamSegment {
  std::string name;  // "layers.3.wq", as the reference implementation names it
  uint64_t param_id = 0;
  int64_t global_rows = 0;
  int64_t global_cols = 0;
  int64_t row_begin = 0, row_end = 0;
  int64_t col_begin = 0, col_end = 0;
  int64_t offset = 0;
  double init_std = 0;         // normal(0, init_std); 0 means all ones (norms)
  bool decay = true;           // AdamW weight decay (matrices yes, norms no)
  bool tp_replicated = false;  // the same on every tp rank (norm weights)

  int64_t rows() const { return row_end - row_begin; }
  int64_t cols() const { return col_end - col_begin; }
  int64_t numel() const { return rows() * cols(); }
};

enum class UnitKind { kEmbedding, kLayer, kOutput };

struct ParamUnit {
  UnitKind kind = UnitKind::kLayer;
  int64_t layer = -1;  // for kLayer
  std::vector<ParamSegment> segments;
  int64_t numel = 0;  // sum of segment sizes (unpadded)
};

// Offsets of a layer unit's weights (elements into the unit).
struct LayerOffsets {
  int64_t attn_norm = 0;  // [h]
  int64_t wqkv = 0;       // [(hq + 2 hkv) * hd / tp, h]
  int64_t wo = 0;         // [h, hq * hd / tp]
  int64_t mlp_norm = 0;   // [h]
  int64_t w_gate_up = 0;  // [2 * ffn / tp, h]
  int64_t w_down = 0;     // [h, ffn / tp]
};
LayerOffsets LayerUnitOffsets(const ParamUnit& unit);

// One model chunk of this rank (vpp chunks per pipeline rank): its layers and
// the indices into ModelShard::units, in forward order.
struct ModelChunk {
  int chunk = 0;
  LayerRange layers;
  bool has_embedding = false;  // first model chunk
  bool has_output = false;     // last model chunk
  std::vector<int> units;
};

struct ModelShard {
  std::vector<ParamUnit> units;
  std::vector<ModelChunk> chunks;  // index = virtual chunk
};

// The units and chunks of the rank at `coords` under a resolved layout that
// fits the model (core CheckLayoutFitsModel).
ModelShard BuildModelShard(const ModelConfig& model, const Layout& layout,
                           const RankCoords& coords);

}  // namespace tessera::executor
