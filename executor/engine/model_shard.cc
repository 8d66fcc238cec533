#include "executor/engine/model_shard.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace tessera::executor {
namespace {

// Parameter ids for the deterministic initialiser (param_init.h).
constexpr uint64_t kEmbeddingId = 1;
constexpr uint64_t kOutputId = 2;
constexpr uint64_t kFinalNormId = 3;
uint64_t LayerParamId(int64_t layer, int which) {
  return 100 + static_cast<uint64_t>(layer) * 16 + which;
}

// Adds a segment at the end of `unit`.
void Append(ParamUnit& unit, ParamSegment segment) {
  segment.offset = unit.numel;
  unit.numel += segment.numel();
  unit.segments.push_back(std::move(segment));
}

ParamSegment RowSlice(std::string name, uint64_t id, int64_t rows, int64_t cols,
                      int64_t tp, int64_t tp_rank, double std) {
  const int64_t local = rows / tp;
  return ParamSegment{std::move(name),
                      id,
                      rows,
                      cols,
                      tp_rank * local,
                      (tp_rank + 1) * local,
                      0,
                      cols,
                      0,
                      std,
                      true,
                      false};
}

ParamSegment ColSlice(std::string name, uint64_t id, int64_t rows, int64_t cols,
                      int64_t tp, int64_t tp_rank, double std) {
  const int64_t local = cols / tp;
  return ParamSegment{
      std::move(name),       id, rows, cols, 0,    rows, tp_rank * local,
      (tp_rank + 1) * local, 0,  std,  true, false};
}

ParamSegment Norm(std::string name, uint64_t id, int64_t hidden) {
  return ParamSegment{std::move(name), id, 1,   hidden, 0,   1, 0,
                      hidden,          0,  0.0, false,  true};
}

}  // namespace

LayerOffsets LayerUnitOffsets(const ParamUnit& unit) {
  // Segment order of a layer unit, as BuildModelShard appends them.
  const std::vector<ParamSegment>& s = unit.segments;
  return LayerOffsets{s[0].offset, s[1].offset, s[4].offset,
                      s[5].offset, s[6].offset, s[8].offset};
}

ModelShard BuildModelShard(const ModelConfig& m, const Layout& l,
                           const RankCoords& c) {
  const int64_t h = m.hidden, hd = m.head_dim(), tp = l.tp;
  // GPT-2 / Megatron initialisation: N(0, 0.02), residual projections scaled
  // by 1/sqrt(2 * layers) (Radford et al. 2019).
  const double std = 0.02;
  const double residual_std = 0.02 / std::sqrt(2.0 * m.layers);
  ModelShard shard;
  for (int chunk = 0; chunk < l.vpp; ++chunk) {
    ModelChunk mc;
    mc.chunk = chunk;
    mc.layers = StageLayers(m.layers, l.pp, l.vpp, c.pp, chunk);
    mc.has_embedding = c.pp == 0 && chunk == 0;
    mc.has_output = c.pp == l.pp - 1 && chunk == l.vpp - 1;
    if (mc.has_embedding) {
      ParamUnit u;
      u.kind = UnitKind::kEmbedding;
      Append(u, RowSlice("embed", kEmbeddingId, m.vocab, h, tp, c.tp, std));
      mc.units.push_back(static_cast<int>(shard.units.size()));
      shard.units.push_back(std::move(u));
    }
    for (int64_t layer = mc.layers.begin; layer < mc.layers.end; ++layer) {
      const std::string p = absl::StrCat("layers.", layer, ".");
      ParamUnit u;
      u.kind = UnitKind::kLayer;
      u.layer = layer;
      Append(u, Norm(p + "attn_norm", LayerParamId(layer, 0), h));
      Append(u, RowSlice(p + "wq", LayerParamId(layer, 1), m.heads * hd, h, tp,
                         c.tp, std));
      Append(u, RowSlice(p + "wk", LayerParamId(layer, 2), m.kv_heads * hd, h,
                         tp, c.tp, std));
      Append(u, RowSlice(p + "wv", LayerParamId(layer, 3), m.kv_heads * hd, h,
                         tp, c.tp, std));
      Append(u, ColSlice(p + "wo", LayerParamId(layer, 4), h, m.heads * hd, tp,
                         c.tp, residual_std));
      Append(u, Norm(p + "mlp_norm", LayerParamId(layer, 5), h));
      Append(u, RowSlice(p + "w_gate", LayerParamId(layer, 6), m.ffn_hidden, h,
                         tp, c.tp, std));
      Append(u, RowSlice(p + "w_up", LayerParamId(layer, 7), m.ffn_hidden, h,
                         tp, c.tp, std));
      Append(u, ColSlice(p + "w_down", LayerParamId(layer, 8), h, m.ffn_hidden,
                         tp, c.tp, residual_std));
      mc.units.push_back(static_cast<int>(shard.units.size()));
      shard.units.push_back(std::move(u));
    }
    if (mc.has_output) {
      ParamUnit u;
      u.kind = UnitKind::kOutput;
      Append(u, Norm("final_norm", kFinalNormId, h));
      Append(u, RowSlice("output", kOutputId, m.vocab, h, tp, c.tp, std));
      mc.units.push_back(static_cast<int>(shard.units.size()));
      shard.units.push_back(std::move(u));
    }
    shard.chunks.push_back(std::move(mc));
  }
  return shard;
}

}  // namespace tessera::executor
