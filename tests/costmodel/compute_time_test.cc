#include "costmodel/compute/compute_time.h"

#include "gtest/gtest.h"
#include "costmodel/memory/layer_activations.h"
#include "costmodel/stacks/stack_calibration.h"

namespace tessera::costmodel {
namespace {

TEST(ComputeTimeTest, GemmEfficiencyByHand) {
  // A100: 312 TFLOP/s over 2039 GB/s = 153.02 FLOP/byte. A 4096^3 GEMM:
  // 0.8 / (1 + 153.02 * 3/4096) = 0.8 / 1.11207 = 0.71938, so
  // 2 * 4096^3 / (312e12 * 0.71938) = 0.61235 ms.
  const GpuSpec a100 = *GpuPreset("a100-sxm-80g");
  const Calibration c;
  EXPECT_NEAR(GemmEfficiency(4096, 4096, 4096, a100, c), 0.71938, 1e-5);
  EXPECT_NEAR(GemmTimeS(4096, 4096, 4096, a100, c), 0.61235e-3, 1e-8);
}

TEST(ComputeTimeTest, ThinMatricesAreSlower) {
  const GpuSpec h100 = *GpuPreset("h100-sxm");
  const Calibration c;
  // Symmetric in its dimensions (backward = forward shapes transposed).
  EXPECT_DOUBLE_EQ(GemmEfficiency(512, 8192, 2048, h100, c),
                   GemmEfficiency(2048, 512, 8192, h100, c));
  // Rises with every dimension towards gemm_peak_efficiency.
  double previous = 0;
  for (double m : {128.0, 512.0, 2048.0, 8192.0, 65536.0}) {
    const double e = GemmEfficiency(m, 8192, 8192, h100, c);
    EXPECT_GT(e, previous);
    EXPECT_LT(e, c.gemm_peak_efficiency);
    previous = e;
  }
  // Splitting the n dimension 8 ways costs more than 8x less time would.
  EXPECT_GT(GemmTimeS(4096, 8192 / 8, 8192, h100, c) * 8,
            GemmTimeS(4096, 8192, 8192, h100, c));
}

TEST(ComputeTimeTest, Llama2_7bLayerByHand) {
  // H100, megatron-core's Hopper coefficients (GEMMs 0.80, attention 0.467,
  // the generic element-wise factor 3), tp 2 without sequence parallelism,
  // b = 1, s = 4096 (M = 4096):
  //   GEMMs QKV 4096x6144x4096, projection 4096x4096x2048, MLP in
  //   4096x11008x4096 (gate+up split by 2), MLP out 4096x4096x5504:
  //   1.248369 ms at 0.8 / (1 + 295.34 * (1/m + 1/n + 1/k)) of 989.4 TFLOP/s;
  //   attention: 4*4096^3/2 FLOPs counted, the causal half computed by the
  //   flash kernel, at 0.467 * 4096 / (4096 + 512) of 989.4 TFLOP/s:
  //   0.167318 ms;
  //   element-wise 3 x (8*s*h + s*(2h + 4h + 2h + 6*11008)/2 = 336,592,896
  //   bytes) / 3350 GB/s: 0.301426 ms.
  const ModelConfig m = *ModelPreset("llama2-7b");
  const GpuSpec h100 = *GpuPreset("h100-sxm");
  const TrainingStack& stack = **FindStack("megatron-core");
  const Calibration c = *StackCalibration(stack, h100, {});
  const LayerComputeTimes t =
      ForwardLayerTimes(m, h100, stack, c, LayerShard{.tp = 2, .seq_len = 4096});
  EXPECT_NEAR(t.gemm_s, 1.248369e-3, 1e-9);
  EXPECT_NEAR(t.attention_s, 0.167318e-3, 1e-9);
  EXPECT_NEAR(t.elementwise_s, 0.301426e-3, 1e-9);
  EXPECT_DOUBLE_EQ(t.total_s(), t.gemm_s + t.attention_s + t.elementwise_s);
  // Materialised attention (megatron-2021) computes the whole square.
  const LayerComputeTimes whole = ForwardLayerTimes(
      m, h100, **FindStack("megatron-2021"), c,
      LayerShard{.tp = 2, .seq_len = 4096});
  EXPECT_NEAR(whole.attention_s, 2 * t.attention_s, 1e-12);
}

TEST(ComputeTimeTest, AttentionEfficiencyRisesWithSequenceLength) {
  // Same FLOPs per token x sequence: time / s^2 falls as s grows, to half
  // at s = attention_seq_half_tokens of the long-sequence rate.
  const ModelConfig m = *ModelPreset("llama3-8b");
  const GpuSpec h100 = *GpuPreset("h100-sxm");
  const TrainingStack& stack = **FindStack("torchtitan");
  Calibration c;
  ASSERT_TRUE(c.Set("attention_seq_half_tokens", 1024).ok());
  auto per_square = [&](int64_t s) {
    return ForwardLayerTimes(m, h100, stack, c, LayerShard{.seq_len = s})
               .attention_s /
           (static_cast<double>(s) * s);
  };
  EXPECT_NEAR(per_square(1024) / per_square(1 << 20), 2.0, 2e-3);
  EXPECT_GT(per_square(2048), per_square(8192));
}

TEST(ComputeTimeTest, Fp8GemmsAndTheirCasts) {
  // fp8 linear layers run at the fp8 peak x fp8_gemm_efficiency, 1-byte
  // operands in the roofline; their casts add fp8_cast_traffic_factor x the
  // bf16 bytes of every operand.
  const ModelConfig m = *ModelPreset("llama3-8b");
  const GpuSpec h100 = *GpuPreset("h100-sxm");
  const TrainingStack& stack = **FindStack("megatron-core");
  Calibration c;
  const double bf16 = GemmTimeS(8192, 4096, 4096, h100, c);
  const double fp8 = GemmTimeS(8192, 4096, 4096, h100, c, Precision::kFp8);
  // 2 * 8192 * 4096^2 / (1978.9e12 * 0.75 / (1 + 590.7 * 0.5 * (1/8192 +
  // 2/4096))) = 0.218593 ms.
  EXPECT_NEAR(fp8, 0.218593e-3, 1e-9);
  EXPECT_LT(fp8, bf16);
  const LayerShard b{.seq_len = 8192};
  const LayerShard f{.seq_len = 8192, .precision = Precision::kFp8};
  const LayerComputeTimes tb = ForwardLayerTimes(m, h100, stack, c, b);
  const LayerComputeTimes tf = ForwardLayerTimes(m, h100, stack, c, f);
  EXPECT_LT(tf.gemm_s, 0.6 * tb.gemm_s);
  EXPECT_DOUBLE_EQ(tf.attention_s, tb.attention_s);  // attention stays bf16
  // Casts: 2 bytes x (inputs 8192 x (4096 + 4096 + 4096 + 14336) + weights
  // 4096 x 6144 + 4096^2 + 4096 x 28672 + 14336 x 4096) x 2.5 / 3350 GB/s.
  const double operands = 8192.0 * (4096 + 4096 + 4096 + 14336) +
                          4096.0 * 6144 + 4096.0 * 4096 + 4096.0 * 28672 +
                          14336.0 * 4096;
  EXPECT_NEAR(tf.elementwise_s - tb.elementwise_s,
              c.fp8_cast_traffic_factor * 2 * operands / 3350e9, 1e-12);
}

TEST(ComputeTimeTest, RecomputationByStackPolicy) {
  const LayerComputeTimes f{.gemm_s = 6,
                            .attention_s = 2,
                            .elementwise_s = 1,
                            .gemm_by_kind_s = {1, 0.5, 0.5, 1, 1, 1, 1}};
  // Full: the whole forward; none: nothing.
  EXPECT_DOUBLE_EQ(
      LayerRecomputeTimeS(f, **FindStack("megatron-core"), Recompute::kFull),
      9);
  EXPECT_DOUBLE_EQ(
      LayerRecomputeTimeS(f, **FindStack("megatron-core"), Recompute::kNone),
      0);
  // Megatron: the attention core.
  EXPECT_DOUBLE_EQ(LayerRecomputeTimeS(f, **FindStack("megatron-core"),
                                       Recompute::kSelective),
                   2);
  // torchtitan per-op: k, out and up GEMMs and the element-wise kernels.
  EXPECT_DOUBLE_EQ(LayerRecomputeTimeS(f, **FindStack("torchtitan"),
                                       Recompute::kSelective),
                   0.5 + 1 + 1 + 1);
  // fms-fsdp: half the layers in full.
  EXPECT_DOUBLE_EQ(LayerRecomputeTimeS(f, **FindStack("pytorch-fsdp"),
                                       Recompute::kSelective),
                   4.5);
}

TEST(ComputeTimeTest, BackwardRecomputesFlashScores) {
  // GEMMs and element-wise kernels: 2x the forward. Attention: a flash
  // kernel's backward recomputes Q K^T (5 products of s x s x d against the
  // forward's 2: 2.5x); a materialised one reads its saved scores (2x).
  const LayerComputeTimes f{.gemm_s = 6, .attention_s = 2, .elementwise_s = 1};
  const TrainingStack& flash = **FindStack("megatron-core");
  const TrainingStack& materialised = **FindStack("megatron-2021");
  ASSERT_EQ(flash.attention, AttentionKernel::kFlash);
  ASSERT_EQ(materialised.attention, AttentionKernel::kMaterialized);
  EXPECT_DOUBLE_EQ(LayerBackwardTimeS(f, flash, Recompute::kNone),
                   2 * 7 + 2.5 * 2);
  EXPECT_DOUBLE_EQ(LayerBackwardTimeS(f, materialised, Recompute::kNone),
                   2 * 9);
  // Recomputation adds the forward it re-runs: full, the whole 9.
  EXPECT_DOUBLE_EQ(LayerBackwardTimeS(f, flash, Recompute::kFull),
                   2 * 7 + 2.5 * 2 + 9);
}

TEST(ComputeTimeTest, ContextParallelSplitsTokensNotKeys) {
  // cp 2 on 2 sequences = the same local tokens as 1 sequence without cp:
  // the same GEMMs, and each rank's queries see the whole sequence (the same
  // attention FLOPs), but in blocks of s/cp, where the kernel is slower.
  const ModelConfig m = *ModelPreset("llama3-8b");
  const GpuSpec h100 = *GpuPreset("h100-sxm");
  const TrainingStack& stack = **FindStack("megatron-core");
  const Calibration c;
  const LayerComputeTimes cp2 = ForwardLayerTimes(
      m, h100, stack, c, LayerShard{.cp = 2, .micro_batch = 2, .seq_len = 8192});
  const LayerComputeTimes one = ForwardLayerTimes(
      m, h100, stack, c, LayerShard{.micro_batch = 1, .seq_len = 8192});
  EXPECT_DOUBLE_EQ(cp2.gemm_s, one.gemm_s);
  // (4096 + 512) / 4096 over (8192 + 512) / 8192.
  EXPECT_NEAR(cp2.attention_s / one.attention_s,
              (4608.0 / 4096) / (8704.0 / 8192), 1e-12);
}

TEST(ComputeTimeTest, LogitsAndOptimizerByHand) {
  const ModelConfig m = *ModelPreset("llama2-7b");
  const GpuSpec h100 = *GpuPreset("h100-sxm");
  const Calibration c;
  const LayerShard shard{.tp = 4, .seq_len = 4096};
  // GEMM 4096 x (32000/4) x 4096 plus 3 (the generic element-wise factor) x
  // 4*4096*8000 bytes of fp32 logits.
  EXPECT_DOUBLE_EQ(
      LogitsForwardTimeS(m, h100, c, shard),
      GemmTimeS(4096, 8000, 4096, h100, c) + 3 * 4.0 * 4096 * 8000 / 3350e9);
  // AdamW: 1e9 parameters x 30 bytes / 3350 GB/s = 8.955 ms.
  EXPECT_NEAR(OptimizerStepTimeS(1e9, h100, c), 8.955224e-3, 1e-9);
}

}  // namespace
}  // namespace tessera::costmodel
