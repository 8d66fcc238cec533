#include "planner/compute/flops.h"

#include "gtest/gtest.h"

namespace tessera::planner {
namespace {

TEST(FlopsTest, Llama2_7bLayerByHand) {
  // llama2-7b: h = 4096, 32 heads = 32 kv heads, ffn = 11008; b = 1,
  // s = 4096 tokens.
  const ModelConfig m = *ModelPreset("llama2-7b");
  const LayerFlops f = ForwardLayerFlops(m, 1, 4096);
  // QKV: 2 * 4096 tokens * 4096 * (4096 + 2*4096) = 412,316,860,416
  EXPECT_DOUBLE_EQ(f.qkv, 412316860416.0);
  // QK^T + PV: 4 * 4096 * 4096 * 4096 = 274,877,906,944
  EXPECT_DOUBLE_EQ(f.attention_core, 274877906944.0);
  // projection: 2 * 4096 * 4096 * 4096 = 137,438,953,472
  EXPECT_DOUBLE_EQ(f.out_proj, 137438953472.0);
  // SwiGLU: 2 * 4096 * 4096 * 11008 * 3 = 1,108,101,562,368
  EXPECT_DOUBLE_EQ(f.mlp, 1108101562368.0);
}

TEST(FlopsTest, GroupedQueryAttentionShrinksKv) {
  // llama2-70b: h = 8192, 64 heads, 8 kv heads: kv_dim = 1024.
  // QKV: 2 * 2048 * 8192 * (8192 + 2*1024) = 343,597,383,680
  const ModelConfig m = *ModelPreset("llama2-70b");
  EXPECT_DOUBLE_EQ(ForwardLayerFlops(m, 1, 2048).qkv, 343597383680.0);
}

TEST(FlopsTest, GptMatchesMegatronsPublishedCount) {
  // Narayanan et al. SC'21: with full recomputation (4 passes of the layers,
  // 3 of the logits) FLOPs per step are
  // 96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)).
  for (const char* name : {"gpt3-175b", "gpt-530b"}) {
    const ModelConfig m = *ModelPreset(name);
    const double b = 1536, s = 2048, l = m.layers, h = m.hidden, v = m.vocab;
    const double megatron =
        96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
    const TrainingConfig t{.global_batch = 1536, .seq_len = 2048};
    EXPECT_NEAR(HardwareFlopsPerStep(m, t, Recompute::kFull) / megatron, 1.0,
                1e-12)
        << name;
    // Without recomputation: 72*B*s*l*h^2*(1 + s/(6h) + V/(12*l*h)).
    const double model_flops =
        72 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h));
    EXPECT_NEAR(ModelFlopsPerStep(m, t) / model_flops, 1.0, 1e-12) << name;
  }
}

TEST(FlopsTest, ModelFlopsAreSixNDPlusAttention) {
  // An independent count from core's parameter counts: 6 FLOPs per weight
  // per token for the layers' matrices and the output projection, plus the
  // attention core 3 * 4*s^2*h per layer per sequence.
  const ModelConfig m = *ModelPreset("llama3-8b");
  const TrainingConfig t{.global_batch = 64, .seq_len = 8192};
  const double s = 8192, tokens = 64 * s;
  const double matrices =
      m.layers * static_cast<double>(m.AttentionParamsPerLayer() +
                                     m.MlpParamsPerLayer()) +
      static_cast<double>(m.vocab) * m.hidden;
  const double expected =
      6 * matrices * tokens + 3 * 4 * s * s * m.hidden * m.layers * 64;
  EXPECT_NEAR(ModelFlopsPerStep(m, t) / expected, 1.0, 1e-12);
}

TEST(FlopsTest, RecomputationAddsForwardWork) {
  const ModelConfig m = *ModelPreset("llama2-13b");
  const LayerFlops f = ForwardLayerFlops(m, 2, 4096);
  EXPECT_EQ(RecomputeLayerFlops(m, Recompute::kNone, 2, 4096), 0);
  EXPECT_DOUBLE_EQ(RecomputeLayerFlops(m, Recompute::kSelective, 2, 4096),
                   f.attention_core);
  EXPECT_DOUBLE_EQ(RecomputeLayerFlops(m, Recompute::kFull, 2, 4096),
                   f.total());
  // Full recomputation: 4 forward-equivalents of the layers instead of 3.
  const TrainingConfig t{.global_batch = 8, .seq_len = 4096};
  const double layers_fwd = m.layers * ForwardLayerFlops(m, 8, 4096).total();
  EXPECT_NEAR(
      HardwareFlopsPerStep(m, t, Recompute::kFull) - ModelFlopsPerStep(m, t),
      layers_fwd, layers_fwd * 1e-12);
  EXPECT_DOUBLE_EQ(LogitsForwardFlops(m, 2, 4096),
                   2.0 * 2 * 4096 * 5120 * 32000);
}

}  // namespace
}  // namespace tessera::planner
