// Pipeline splits as the frameworks make them (costmodel/pipeline/
// stage_split.h), by hand.
#include "costmodel/pipeline/stage_split.h"

#include "gtest/gtest.h"
#include "costmodel/memory/memory_model.h"
#include "costmodel/pipeline/stage_params.h"
#include "costmodel/prediction.h"
#include "costmodel/stacks/stack_calibration.h"

namespace tessera::costmodel {
namespace {

// nanotron's Llama 1B and 8B of the Ultra-Scale Playbook (MHA).
ModelConfig Nanotron1b() {
  return ModelConfig{.name = "1b", .layers = 16, .hidden = 2048, .heads = 32,
                     .kv_heads = 32, .ffn_hidden = 8192, .vocab = 131072,
                     .mlp = MlpKind::kSwiGlu, .tie_embeddings = true};
}
ModelConfig Nanotron8b() {
  return ModelConfig{.name = "8b", .layers = 32, .hidden = 4096, .heads = 32,
                     .kv_heads = 32, .ffn_hidden = 14336, .vocab = 131072};
}

TEST(StageSplitTest, NanotronSplitsByCumulativeCost) {
  // 1B: a layer costs 4 * 2048^2 + 3 * 8192 * 2048 = 2^26, the output layer
  // 131072 * 2048 = 2^28 = 4 layers; total 20. pp 2: the threshold, 10
  // layers' cost, is passed by the 11th layer, which stays on rank 0.
  const ModelConfig m = Nanotron1b();
  const Layout pp2{.pp = 2};
  const PipelineSplit cost = PipelineSplit::kCumulativeCost;
  StageBlocks first = StageBlocksOf(m, pp2, cost, 0);
  StageBlocks second = StageBlocksOf(m, pp2, cost, 1);
  EXPECT_EQ(first.layers, 11);
  EXPECT_TRUE(first.embedding);
  EXPECT_FALSE(first.head);
  EXPECT_EQ(second.layers, 5);
  EXPECT_TRUE(second.head);
  // The even split: 8 and 8.
  EXPECT_EQ(StageBlocksOf(m, pp2, PipelineSplit::kEven, 0).layers, 8);
  // 8B: a layer 4 * 4096^2 + 3 * 14336 * 4096 = 243,269,632, the output
  // layer 536,870,912 = 2.207 layers; total 34.207. pp 4: thresholds 8.55,
  // 17.10, 25.66 layers, passed by layers 9, 18 and 26: 9, 9, 8 and 6 with
  // the head.
  const Layout pp4{.pp = 4};
  const ModelConfig b = Nanotron8b();
  EXPECT_EQ(StageBlocksOf(b, pp4, cost, 0).layers, 9);
  EXPECT_EQ(StageBlocksOf(b, pp4, cost, 1).layers, 9);
  EXPECT_EQ(StageBlocksOf(b, pp4, cost, 2).layers, 8);
  EXPECT_EQ(StageBlocksOf(b, pp4, cost, 3).layers, 6);
  EXPECT_EQ(HeadStage(b, pp4, cost), 3);
  // Parameters follow: rank 0 holds 11 layers and the embedding.
  const StageParams p = StageParamsPerGpu(m, pp2, cost, 0);
  EXPECT_DOUBLE_EQ(p.params, 11 * static_cast<double>(m.ParamsPerLayer()) +
                                 static_cast<double>(m.EmbeddingParams()));
}

TEST(StageSplitTest, NanotronRanksPastTheLossHoldNothing) {
  // 1B on pp 32: each threshold is 20/32 = 0.625 layers, so every block
  // with a cost moves to the next rank, and so does every block after the
  // 16 layers (the cumulative cost is far past the thresholds): layer i on
  // rank i, final norm on 16, output layer on 17, cast 18, loss 19; ranks
  // 20-31 hold nothing.
  const ModelConfig m = Nanotron1b();
  const Layout pp32{.pp = 32};
  const PipelineSplit cost = PipelineSplit::kCumulativeCost;
  EXPECT_EQ(StageBlocksOf(m, pp32, cost, 15).layers, 1);
  EXPECT_EQ(StageBlocksOf(m, pp32, cost, 16).layers, 0);
  EXPECT_EQ(HeadStage(m, pp32, cost), 17);
  EXPECT_EQ(ActiveStages(m, pp32, cost), 20);
  // nanotron runs it; the even split refuses 32 stages for 16 layers.
  const Workload w{m, MakeCluster(*GpuPreset("h100-sxm"), 8, 8),
                   TrainingConfig{.global_batch = 256, .seq_len = 4096,
                                  .stack = "nanotron"}};
  const LayoutEvaluation e =
      PredictLayout(w, Layout{.pp = 32, .zero = 1}, *DefaultCalibration(w));
  EXPECT_GT(e.prediction.step_time_s, 0) << e.reason;
  EXPECT_FALSE(
      CheckLayoutFitsModel(Layout{.pp = 32, .dp = 2}, m, 4096).ok());
}

TEST(StageSplitTest, StageZeroKeepsItsLayersForEachMicroBatchInFlight) {
  // 1F1B: rank s keeps min(m, active ranks - s) micro-batches of its layers.
  // nanotron 1B, pp 2: rank 0 keeps 2 x 11 layers (the even split's 2 x 8);
  // pp 32: 20 ranks take part, so rank 0 keeps 20 x 1 layer, not 32.
  const ModelConfig m = Nanotron1b();
  const TrainingConfig t{.global_batch = 256, .seq_len = 4096,
                         .stack = "nanotron"};
  const TrainingStack stack = *StackForTraining(t);
  const Calibration c;
  auto activations = [&](const Layout& l) {
    const LayerMemory layer = LayerMemoryOf(m, l, t, stack, c);
    return StageMemory(m, l, t, stack, c, layer, 0).activations_bytes /
           layer.kept_bytes;
  };
  EXPECT_NEAR(activations(Layout{.pp = 2, .dp = 4, .zero = 1,
                                 .shard_group = 4, .grad_accum = 64}),
              22, 1e-9);
  EXPECT_NEAR(activations(Layout{.pp = 32, .dp = 2, .zero = 1,
                                 .shard_group = 2, .grad_accum = 128}),
              20, 1e-9);
}

TEST(StageSplitTest, MegatronEmbeddingAndLossTakeALayersPlace) {
  // Llama 3 405B as Meta split it: 126 layers on pp 16 x vpp 8 = 128
  // chunks. With the embedding and the loss counted as layers, 128 slots
  // give one per chunk: rank 0's first chunk is the embedding alone and
  // rank 15's last the loss alone, so the first and last ranks hold 7
  // layers, the others 8 (126 in all).
  const ModelConfig m = *ModelPreset("llama3-405b");
  const Layout l{.tp = 8, .sp = true, .pp = 16, .vpp = 8};
  const PipelineSplit ends = PipelineSplit::kEmbeddingAndLossAsLayers;
  int64_t total = 0;
  for (int64_t s = 0; s < 16; ++s) {
    total += StageBlocksOf(m, l, ends, s).layers;
  }
  EXPECT_EQ(total, 126);
  EXPECT_EQ(StageBlocksOf(m, l, ends, 0).layers, 7);
  EXPECT_EQ(StageBlocksOf(m, l, ends, 1).layers, 8);
  EXPECT_EQ(StageBlocksOf(m, l, ends, 15).layers, 7);
  // Where the layers divide: llama3-8b's 32 layers on pp 4 split evenly
  // 8/8/8/8; with the embedding and the loss as layers, 34 slots: ceil(34/4)
  // = 9 per rank but the two ends one fewer (8 slots), less the embedding
  // and the loss: 7, 9, 9, 7.
  const ModelConfig l3 = *ModelPreset("llama3-8b");
  const Layout pp4{.pp = 4};
  EXPECT_EQ(StageBlocksOf(l3, pp4, PipelineSplit::kEven, 0).layers, 8);
  EXPECT_EQ(StageBlocksOf(l3, pp4, ends, 0).layers, 7);
  EXPECT_EQ(StageBlocksOf(l3, pp4, ends, 1).layers, 9);
  EXPECT_EQ(StageBlocksOf(l3, pp4, ends, 3).layers, 7);
  // Refused without the option (128 chunks exceed 126 layers), predicted
  // with it.
  const Workload base{m, MakeCluster(*GpuPreset("h100-sxm"), 2048, 8),
                      TrainingConfig{.global_batch = 2048, .seq_len = 8192}};
  const Layout meta{.tp = 8, .sp = true, .pp = 16, .vpp = 8, .zero = 1,
                    .micro_batch = 1};
  EXPECT_EQ(PredictLayout(base, meta, *DefaultCalibration(base))
                .prediction.step_time_s,
            0);
  Workload with = base;
  with.training.stack_options = {"account-for-embedding-and-loss"};
  const LayoutEvaluation e = PredictLayout(with, meta, *DefaultCalibration(with));
  EXPECT_GT(e.prediction.step_time_s, 0) << e.reason;
}

}  // namespace
}  // namespace tessera::costmodel
