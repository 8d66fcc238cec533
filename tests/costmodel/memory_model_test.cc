#include "costmodel/memory/memory_model.h"

#include "core/units.h"
#include "gtest/gtest.h"
#include "costmodel/memory/layer_activations.h"
#include "costmodel/pipeline/pipeline_schedule.h"
#include "costmodel/pipeline/stage_params.h"
#include "costmodel/stacks/stack_calibration.h"

namespace tessera::costmodel {
namespace {


// Resolves a layout on `world` GPUs for `global_batch` sequences.
Layout Resolve(Layout l, int64_t world, int64_t global_batch) {
  absl::StatusOr<Layout> r = ResolveLayout(l, world, global_batch);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

TEST(StageParamsTest, EmbeddingOnTheFirstStageOutputOnTheLast) {
  // llama2-7b on 4 stages of 8 layers; tp 2 halves everything.
  const ModelConfig m = *ModelPreset("llama2-7b");
  const Layout l{.tp = 2, .pp = 4};
  const StageParams first = StageParamsPerGpu(m, l, 0);
  const StageParams last = StageParamsPerGpu(m, l, 3);
  const StageParams middle = StageParamsPerGpu(m, l, 1);
  EXPECT_EQ(first.layers, 8);
  EXPECT_DOUBLE_EQ(first.params,
                   (8.0 * m.ParamsPerLayer() + 32000.0 * 4096) / 2);
  EXPECT_DOUBLE_EQ(middle.params, 8.0 * m.ParamsPerLayer() / 2);
  // Output projection 32000 x 4096 plus the final RMSNorm 4096.
  EXPECT_DOUBLE_EQ(last.params,
                   (8.0 * m.ParamsPerLayer() + 32000.0 * 4096 + 4096) / 2);
  // All stages together hold the model once.
  double total = 0;
  for (int64_t s = 0; s < 4; ++s) total += StageParamsPerGpu(m, l, s).params;
  EXPECT_DOUBLE_EQ(total * 2, static_cast<double>(m.ParamCount()));
  // Interleaved (2 chunks of 4 layers per rank) and uneven (32 = 10+11+11:
  // the first stage, which holds the embedding, is the lighter end), also
  // interleaved (32 layers in 6 chunks of 6 but 4 of 5, taken alternately
  // from the ends: chunks 0, 5, 1, 4; stage 0 holds chunks 0 and 3, 5 + 6,
  // stage 1 chunks 1 and 4, 5 + 5, stage 2 chunks 2 and 5, 6 + 5).
  EXPECT_EQ(StageParamsPerGpu(m, Layout{.pp = 4, .vpp = 2}, 3).layers, 8);
  EXPECT_EQ(StageParamsPerGpu(m, Layout{.pp = 3}, 0).layers, 10);
  EXPECT_EQ(StageParamsPerGpu(m, Layout{.pp = 3}, 2).layers, 11);
  EXPECT_EQ(StageParamsPerGpu(m, Layout{.pp = 3, .vpp = 2}, 0).layers, 11);
  EXPECT_EQ(StageParamsPerGpu(m, Layout{.pp = 3, .vpp = 2}, 1).layers, 10);
  EXPECT_EQ(StageParamsPerGpu(m, Layout{.pp = 3, .vpp = 2}, 2).layers, 11);
}

TEST(StageParamsTest, TiedEmbeddingsCopiedToTheLastStage) {
  const ModelConfig gpt = *ModelPreset("gpt3-175b");  // tied
  const StageParams last = StageParamsPerGpu(gpt, Layout{.pp = 2}, 1);
  EXPECT_DOUBLE_EQ(last.output_params, 51200.0 * 12288 + 2 * 12288);
  EXPECT_DOUBLE_EQ(StageParamsPerGpu(gpt, Layout{}, 0).output_params,
                   2 * 12288.0);  // pp 1: shares the embedding
}

TEST(PipelineScheduleTest, InFlightMicroBatches) {
  // 1F1B, pp 4, 8 micro-batches: stage 0 holds 4, the last stage 1.
  Layout l{.pp = 4, .grad_accum = 8};
  EXPECT_EQ(InFlightLayers(l, 0, 32, 8), 4 * 8);
  EXPECT_EQ(InFlightLayers(l, 3, 32, 8), 1 * 8);
  l.grad_accum = 2;  // fewer micro-batches than stages
  EXPECT_EQ(InFlightLayers(l, 0, 32, 8), 2 * 8);
  // Interleaved, v = 2: stage 0 keeps 2*3 + 1*4 + 1 = 11 chunks of 4 layers
  // = 44 = 32 * (1 + 3/8) (Korthikanti et al. 2022, Section 4.2.3); stage 3
  // keeps 0 + 4 + 1 = 5 chunks.
  l = Layout{.pp = 4, .vpp = 2, .grad_accum = 8};
  EXPECT_DOUBLE_EQ(InFlightLayers(l, 0, 32, 8), 44);
  EXPECT_DOUBLE_EQ(InFlightLayers(l, 3, 32, 8), 20);
}

TEST(PipelineScheduleTest, BubbleFraction) {
  EXPECT_EQ(PipelineBubbleFraction(1, 1, 8), 0);
  EXPECT_DOUBLE_EQ(PipelineBubbleFraction(8, 1, 32), 7.0 / 32);
  EXPECT_DOUBLE_EQ(PipelineBubbleFraction(8, 4, 32), 7.0 / 128);
}

const TrainingStack& Stack(const char* name) { return **FindStack(name); }

TrainingConfig Training(int64_t global_batch, int64_t seq_len,
                        Precision precision = Precision::kBf16) {
  return TrainingConfig{.global_batch = global_batch,
                        .seq_len = seq_len,
                        .precision = precision};
}

TEST(MemoryModelTest, ModelStatesByZeroStage) {
  // llama2-7b, 8 GPUs, dp 8, Megatron-Core: 2 + 4 + 4 + 8 bytes per
  // parameter, sharded 8 ways by stage: zero 1 master and moments, zero 2 +
  // gradients, zero 3 + weights.
  const ModelConfig m = *ModelPreset("llama2-7b");
  const double p = static_cast<double>(m.ParamCount());
  const Calibration c;
  const TrainingStack& mc = Stack("megatron-core");
  const TrainingConfig t = Training(8, 4096);
  const MemoryBreakdown z0 =
      PeakMemoryPerGpu(m, Resolve(Layout{}, 8, 8), t, mc, c);
  EXPECT_DOUBLE_EQ(z0.weights_bytes, 2 * p);
  EXPECT_DOUBLE_EQ(z0.master_weights_bytes, 4 * p);
  EXPECT_DOUBLE_EQ(z0.gradients_bytes, 4 * p);
  EXPECT_DOUBLE_EQ(z0.optimizer_bytes, 8 * p);
  EXPECT_EQ(z0.gathered_params_bytes, 0);
  const MemoryBreakdown z1 =
      PeakMemoryPerGpu(m, Resolve(Layout{.zero = 1}, 8, 8), t, mc, c);
  EXPECT_DOUBLE_EQ(z1.master_weights_bytes, 4 * p / 8);
  EXPECT_DOUBLE_EQ(z1.optimizer_bytes, 8 * p / 8);
  EXPECT_DOUBLE_EQ(z1.gradients_bytes, 4 * p);
  const MemoryBreakdown z2 =
      PeakMemoryPerGpu(m, Resolve(Layout{.zero = 2}, 8, 8), t, mc, c);
  EXPECT_DOUBLE_EQ(z2.gradients_bytes, 4 * p / 8);
  EXPECT_DOUBLE_EQ(z2.weights_bytes, 2 * p);
  EXPECT_EQ(z2.gathered_params_bytes, 0);  // ZeRO-2 keeps the weights whole
  const MemoryBreakdown z3 =
      PeakMemoryPerGpu(m, Resolve(Layout{.zero = 3}, 8, 8), t, mc, c);
  EXPECT_DOUBLE_EQ(z3.weights_bytes, 2 * p / 8);
  // Gathered: the current and the prefetched unit in bf16, and the current
  // unit's gradient in bf16 and fp32, of the largest unit: one layer (202.4M
  // parameters, one unit per layer), larger than the embedding and the
  // output projection (131M each).
  const double layer = static_cast<double>(m.ParamsPerLayer());
  EXPECT_DOUBLE_EQ(z3.gathered_params_bytes, (2 * 2 + 2 + 4) * layer);
  // Memory falls with every stage.
  EXPECT_GT(z0.total_bytes, z1.total_bytes);
  EXPECT_GT(z1.total_bytes, z2.total_bytes);
  EXPECT_GT(z2.total_bytes, z3.total_bytes);
}

TEST(MemoryModelTest, StacksKeepDifferentStates) {
  // FSDP / FSDP2 keep the fp32 parameter as the only persistent copy: 0 + 4
  // + 4 + 8 bytes per parameter; Transformer Engine's fp8 keeps 2 more.
  const ModelConfig m = *ModelPreset("llama2-7b");
  const double p = static_cast<double>(m.ParamCount());
  const Calibration c;
  const Layout z3 = Resolve(Layout{.zero = 3}, 8, 8);
  const MemoryBreakdown titan =
      PeakMemoryPerGpu(m, z3, Training(8, 4096), Stack("torchtitan"), c);
  EXPECT_EQ(titan.weights_bytes, 0);
  EXPECT_DOUBLE_EQ(titan.master_weights_bytes, 4 * p / 8);
  const MemoryBreakdown te = PeakMemoryPerGpu(
      m, Resolve(Layout{.zero = 1}, 8, 8), Training(8, 4096, Precision::kFp8),
      Stack("megatron-core"), c);
  EXPECT_DOUBLE_EQ(te.weights_bytes, (2 + 2) * p);
  // FSDP SHARD_GRAD_OP (pytorch-fsdp's zero 2): weights sharded at rest, the
  // whole model gathered in bf16 from the forward to the backward, plus the
  // current unit's gradient (bf16 and its bf16 reduce copy).
  const MemoryBreakdown sgo =
      PeakMemoryPerGpu(m, Resolve(Layout{.zero = 2}, 8, 8), Training(8, 4096),
                       Stack("pytorch-fsdp"), c);
  EXPECT_DOUBLE_EQ(sgo.master_weights_bytes, 4 * p / 8);
  const double layer = static_cast<double>(m.ParamsPerLayer());
  EXPECT_DOUBLE_EQ(sgo.gathered_params_bytes, 2 * p + (2 + 2) * layer);
}

TEST(MemoryModelTest, TorchtitanKeepsAPipelineStageGathered) {
  // With pipeline parallelism torchtitan keeps the stage's parameters
  // gathered (bf16) and its gradients unsharded (fp32) across the
  // micro-batches; Megatron FSDP re-gathers unit by unit.
  const ModelConfig m = *ModelPreset("llama2-7b");
  const Calibration c;
  const Layout l = Resolve(Layout{.pp = 2, .zero = 3}, 16, 64);
  const StageParams stage = StageParamsPerGpu(m, l, 0);
  EXPECT_DOUBLE_EQ(StageMemory(m, l, Training(64, 4096), Stack("torchtitan"),
                               c, 0)
                       .gathered_params_bytes,
                   (2 + 4) * stage.params);
  EXPECT_DOUBLE_EQ(StageMemory(m, l, Training(64, 4096),
                               Stack("megatron-core"), c, 0)
                       .gathered_params_bytes,
                   (2 * 2 + 2 + 4) * stage.layer_params);
}

TEST(MemoryModelTest, HsdpAndContextParallelSharding) {
  // 32 GPUs: cp 2, dp 16, zero 3 with shard groups of 4: states shard over
  // 4 * 2 = 8 ranks.
  const ModelConfig m = *ModelPreset("llama2-7b");
  const double p = static_cast<double>(m.ParamCount());
  const MemoryBreakdown mem = PeakMemoryPerGpu(
      m, Resolve(Layout{.cp = 2, .zero = 3, .shard_group = 4}, 32, 32),
      Training(32, 4096), Stack("megatron-core"), Calibration{});
  EXPECT_DOUBLE_EQ(mem.weights_bytes, 2 * p / 8);
  EXPECT_DOUBLE_EQ(mem.optimizer_bytes, 8 * p / 8);
}

TEST(MemoryModelTest, ActivationsLogitsAndOverheadByHand) {
  // llama2-7b, pp 1, micro_batch 2, s 4096, full recomputation: 32 layer
  // inputs plus the whole set of the layer being recomputed (less its
  // input, already counted), the logits at
  // logits_bytes_per_element (4) * 2 * 4096 * 32000, and the overhead 1 GiB
  // + 8% of the rest.
  const ModelConfig m = *ModelPreset("llama2-7b");
  const Calibration c;
  const TrainingStack& mc = Stack("megatron-core");
  const Layout l = Resolve(
      Layout{.micro_batch = 2, .recompute = Recompute::kFull}, 8, 64);
  const MemoryBreakdown mem = PeakMemoryPerGpu(m, l, Training(64, 4096), mc, c);
  const LayerShard shard{.micro_batch = 2, .seq_len = 4096};
  const double input = 2.0 * 2 * 4096 * 4096;  // 2 bytes x tokens x h
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, shard, mc, Recompute::kFull, c),
                   input);
  EXPECT_DOUBLE_EQ(mem.activations_bytes,
                   32 * input + LayerWorkingSetBytes(m, shard, mc, c) - input);
  EXPECT_DOUBLE_EQ(mem.logits_bytes, 4.0 * 2 * 4096 * 32000);
  const double tensors = mem.weights_bytes + mem.master_weights_bytes +
                         mem.gradients_bytes + mem.optimizer_bytes +
                         mem.activations_bytes + mem.logits_bytes +
                         mem.gathered_params_bytes;
  EXPECT_DOUBLE_EQ(mem.overhead_bytes, 1.0 * kGiB + 0.08 * tensors);
  EXPECT_DOUBLE_EQ(mem.total_bytes, tensors + mem.overhead_bytes);
}

TEST(MemoryModelTest, RecomputationTradesMemory) {
  // torchtitan's selective policy keeps less than none, full less still.
  const ModelConfig m = *ModelPreset("llama2-13b");
  const Calibration c;
  double previous = 1e300;
  for (Recompute r :
       {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    const Layout l =
        Resolve(Layout{.tp = 8, .sp = true, .pp = 4, .recompute = r}, 64, 64);
    const double bytes = PeakMemoryPerGpu(m, l, Training(64, 4096),
                                          Stack("torchtitan"), c)
                             .activations_bytes;
    EXPECT_LT(bytes, previous) << RecomputeName(r);
    previous = bytes;
  }
  // Megatron's attention-core recomputation frees nothing under flash
  // attention and re-materialises nothing.
  const Layout none = Resolve(Layout{.tp = 8, .sp = true, .pp = 4}, 64, 64);
  Layout selective = none;
  selective.recompute = Recompute::kSelective;
  EXPECT_EQ(PeakMemoryPerGpu(m, selective, Training(64, 4096),
                             Stack("megatron-core"), c)
                .activations_bytes,
            PeakMemoryPerGpu(m, none, Training(64, 4096),
                             Stack("megatron-core"), c)
                .activations_bytes);
}

TEST(MemoryModelTest, FirstStageHoldsMostMicroBatches) {
  // llama2-70b, tp 8 + sp, pp 4 (20 layers each), dp 2, 32 micro-batches:
  // stage 0 holds 4 micro-batches of 20 layers, the last stage 1 plus the
  // logits.
  const ModelConfig m = *ModelPreset("llama2-70b");
  const Calibration c;
  const TrainingStack& mc = Stack("megatron-core");
  const TrainingConfig t = Training(64, 4096);
  const Layout l = Resolve(Layout{.tp = 8, .sp = true, .pp = 4}, 64, 64);
  const LayerShard shard = LayerShard::Of(l, t);
  const double per_layer =
      LayerActivationBytes(m, shard, mc, Recompute::kNone, c);
  const MemoryBreakdown first = StageMemory(m, l, t, mc, c, 0);
  const MemoryBreakdown last = StageMemory(m, l, t, mc, c, 3);
  EXPECT_DOUBLE_EQ(first.activations_bytes, 4 * 20 * per_layer);
  EXPECT_DOUBLE_EQ(last.activations_bytes, 20 * per_layer);
  EXPECT_DOUBLE_EQ(last.logits_bytes, LogitsWorkingSetBytes(m, shard, c));
  EXPECT_EQ(PeakMemoryPerGpu(m, l, t, mc, c).total_bytes,
            std::max(first.total_bytes, last.total_bytes));
  // The driver's memory less the default headroom of 5%.
  EXPECT_DOUBLE_EQ(UsableMemoryBytes(MakeCluster(*GpuPreset("h100-sxm"), 1, 8)),
                   0.95 * 81559.0 * 1024 * 1024);
}

}  // namespace
}  // namespace tessera::costmodel

namespace tessera::costmodel {
namespace {

TEST(MemoryModelTest, NanotronKeepsItsBytesAsNanotronDoes) {
  // nanotron 1B (16 layers, h 2048, ffn 8192, V 131072, tied), dp 8, ZeRO-1,
  // one sequence of 4096 per micro-batch, no recomputation:
  //   gradients  bf16 .grad + the fp32 accumulation buffer, unsharded by
  //              ZeRO-1: 6 bytes per parameter (FP32GradientAccumulator)
  //   activations per layer and token: 8 h (norm inputs and outputs, q, k,
  //              v, attention output) + 4 ffn (gate/up, SiLU(gate) kept by
  //              the unfused GLU, their product) bf16 elements = 2 * (8 *
  //              2048 + 4 * 8192) = 98,304 bytes, and flash attention's
  //              fp32 log-sum-exp per head (32 x 4 bytes); 16 layers x 4096
  //              tokens
  //   logits     fp32 logits and their fp32 softmax: 8 bytes x 4096 x 131072
  const ModelConfig m{.name = "1b", .layers = 16, .hidden = 2048, .heads = 32,
                      .kv_heads = 32, .ffn_hidden = 8192, .vocab = 131072,
                      .mlp = MlpKind::kSwiGlu, .tie_embeddings = true};
  const Workload w{m, MakeCluster(*GpuPreset("h100-sxm"), 1, 8),
                   TrainingConfig{.global_batch = 256, .seq_len = 4096,
                                  .stack = "nanotron"}};
  const Layout l{.dp = 8, .zero = 1, .shard_group = 8, .micro_batch = 1,
                 .grad_accum = 32};
  const TrainingStack stack = *StackForTraining(w.training);
  const MemoryBreakdown b = StageMemory(m, l, w.training, stack,
                                        *DefaultCalibration(w), 0);
  const double params = 16 * static_cast<double>(m.ParamsPerLayer()) +
                        static_cast<double>(m.EmbeddingParams()) +
                        static_cast<double>(m.OutputParams());
  EXPECT_DOUBLE_EQ(b.gradients_bytes, 6 * params);
  EXPECT_DOUBLE_EQ(b.activations_bytes, 16.0 * 4096 * (98304 + 32 * 4));
  EXPECT_DOUBLE_EQ(b.logits_bytes, 8.0 * 4096 * 131072);
}

}  // namespace
}  // namespace tessera::costmodel
