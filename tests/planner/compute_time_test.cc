#include "planner/compute_time.h"

#include "gtest/gtest.h"
#include "planner/activations.h"

namespace tessera::planner {
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
  // H100, tp 2 without sequence parallelism, b = 1, s = 4096 (M = 4096):
  //   GEMMs QKV 4096x6144x4096, projection 4096x4096x2048, MLP in
  //   4096x11008x4096 (gate+up split by 2), MLP out 4096x4096x5504:
  //   1.248369 ms at 0.8 / (1 + 295.34 * (1/m + 1/n + 1/k)) of 989.4 TFLOP/s;
  //   attention 4*4096^3/2 FLOPs at 50% of 989.4 TFLOP/s: 0.277823 ms;
  //   element-wise 6 x (8*s*h + s*(2h + 4h + 2h + 6*11008)/2 = 336,592,896
  //   bytes) / 3350 GB/s: 0.602853 ms.
  const ModelConfig m = *ModelPreset("llama2-7b");
  const GpuSpec h100 = *GpuPreset("h100-sxm");
  const LayerComputeTimes t = ForwardLayerTimes(
      m, h100, Calibration{}, LayerShard{.tp = 2, .seq_len = 4096});
  EXPECT_NEAR(t.gemm_s, 1.248369e-3, 1e-9);
  EXPECT_NEAR(t.attention_s, 0.277823e-3, 1e-9);
  EXPECT_NEAR(t.elementwise_s, 0.602853e-3, 1e-9);
  EXPECT_DOUBLE_EQ(t.total_s(), t.gemm_s + t.attention_s + t.elementwise_s);
}

TEST(ComputeTimeTest, ContextParallelSplitsTokensNotKeys) {
  // cp 2 on 2 sequences = the same local tokens as 1 sequence without cp,
  // but each rank's queries see the whole sequence: attention is the same,
  // GEMMs and element-wise kernels the same.
  const ModelConfig m = *ModelPreset("llama3-8b");
  const GpuSpec h100 = *GpuPreset("h100-sxm");
  const LayerComputeTimes cp2 =
      ForwardLayerTimes(m, h100, Calibration{},
                        LayerShard{.cp = 2, .micro_batch = 2, .seq_len = 8192});
  const LayerComputeTimes one = ForwardLayerTimes(
      m, h100, Calibration{}, LayerShard{.micro_batch = 1, .seq_len = 8192});
  EXPECT_DOUBLE_EQ(cp2.gemm_s, one.gemm_s);
  EXPECT_DOUBLE_EQ(cp2.attention_s, one.attention_s);
}

TEST(ComputeTimeTest, LogitsAndOptimizerByHand) {
  const ModelConfig m = *ModelPreset("llama2-7b");
  const GpuSpec h100 = *GpuPreset("h100-sxm");
  const Calibration c;
  const LayerShard shard{.tp = 4, .seq_len = 4096};
  // GEMM 4096 x (32000/4) x 4096 plus 6 x 4*4096*8000 bytes of fp32 logits.
  EXPECT_DOUBLE_EQ(
      LogitsForwardTimeS(m, h100, c, shard),
      GemmTimeS(4096, 8000, 4096, h100, c) + 6 * 4.0 * 4096 * 8000 / 3350e9);
  // AdamW: 1e9 parameters x 30 bytes / 3350 GB/s = 8.955 ms.
  EXPECT_NEAR(OptimizerStepTimeS(1e9, h100, c), 8.955224e-3, 1e-9);
}

}  // namespace
}  // namespace tessera::planner
