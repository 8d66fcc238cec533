#include "costmodel/pipeline/stage_split.h"

#include <algorithm>

namespace tessera::costmodel {
namespace {

// nanotron's pipeline blocks after the layers: final norm, output layer,
// fp32 cast, loss (the embedding comes before the layers).
constexpr int kBlocksAfterLayers = 4;
constexpr int kHeadBlock = 1;  // the output layer, among those

// The rank of every block under nanotron's cumulative-cost split, walked in
// order; `visit(block, rank)` with block -1 the embedding, 0..L-1 the layers,
// L.. the blocks after them.
template <typename Visit>
void WalkCumulativeCost(const ModelConfig& m, int64_t pp, Visit visit) {
  const double h = static_cast<double>(m.hidden);
  const double layer_cost =
      4 * h * h + 3 * static_cast<double>(m.ffn_hidden) * h;
  const double head_cost = static_cast<double>(m.vocab) * h;
  const double total = static_cast<double>(m.layers) * layer_cost + head_cost;
  int64_t rank = 0;
  double cumulative = 0;
  auto place = [&](int64_t block, double cost) {
    cumulative += cost;
    visit(block, rank);
    const double threshold =
        total * static_cast<double>(rank + 1) / static_cast<double>(pp);
    if (cumulative > threshold && rank + 1 < pp) ++rank;
  };
  place(-1, 0);
  for (int64_t i = 0; i < m.layers; ++i) place(i, layer_cost);
  for (int64_t b = 0; b < kBlocksAfterLayers; ++b) {
    place(m.layers + b, b == kHeadBlock ? head_cost : 0);
  }
}

}  // namespace

StageBlocks StageBlocksOf(const ModelConfig& m, const Layout& l,
                          PipelineSplit split, int64_t stage) {
  StageBlocks b;
  switch (split) {
    case PipelineSplit::kEven:
      b.layers = StageLayerCount(m.layers, l.pp, l.vpp, stage);
      b.embedding = stage == 0;
      b.head = stage == l.pp - 1;
      return b;
    case PipelineSplit::kEmbeddingAndLossAsLayers:
      // Slots = layers + 2; the embedding takes rank 0's first slot, the
      // loss rank pp-1's last.
      b.embedding = stage == 0;
      b.head = stage == l.pp - 1;
      b.layers = StageLayerCount(m.layers + 2, l.pp, l.vpp, stage) -
                 (b.embedding ? 1 : 0) - (b.head ? 1 : 0);
      return b;
    case PipelineSplit::kCumulativeCost:
      break;
  }
  WalkCumulativeCost(m, l.pp, [&](int64_t block, int64_t rank) {
    if (rank != stage) return;
    if (block < 0) {
      b.embedding = true;
    } else if (block < m.layers) {
      ++b.layers;
    } else if (block == m.layers + kHeadBlock) {
      b.head = true;
    }
  });
  return b;
}

int64_t HeadStage(const ModelConfig& m, const Layout& l, PipelineSplit split) {
  if (split != PipelineSplit::kCumulativeCost) return l.pp - 1;
  int64_t head = 0;
  WalkCumulativeCost(m, l.pp, [&](int64_t block, int64_t rank) {
    if (block == m.layers + kHeadBlock) head = rank;
  });
  return head;
}

int64_t ActiveStages(const ModelConfig& m, const Layout& l,
                     PipelineSplit split) {
  if (split != PipelineSplit::kCumulativeCost) return l.pp;
  int64_t last = 0;
  WalkCumulativeCost(m, l.pp,
                     [&](int64_t, int64_t rank) { last = std::max(last, rank); });
  return last + 1;
}

int64_t PipelineBlocksBesidesLayers(PipelineSplit split) {
  switch (split) {
    case PipelineSplit::kEven:
      return 0;
    case PipelineSplit::kEmbeddingAndLossAsLayers:
      return 2;
    case PipelineSplit::kCumulativeCost:
      break;
  }
  // Any: the ranks past the loss's hold nothing and idle.
  return int64_t{1} << 30;
}

}  // namespace tessera::costmodel
