#include "costmodel/compute/flops.h"

#include "core/model_flops.h"

#include "gtest/gtest.h"

namespace tessera::costmodel {
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

TEST(FlopsTest, PartsSumToTheModelFlopsMfuDivides) {
  // The compute model's parts (layers and output projection, forward, x3 for
  // forward and backward) are core's model FLOPs, which a trial's measured
  // MFU divides too: predicted and measured MFU count the same FLOPs.
  for (const char* name : {"llama2-7b", "llama2-70b", "llama3-8b",
                           "llama3-405b", "gpt3-175b", "tiny"}) {
    const ModelConfig m = *ModelPreset(name);
    for (int64_t s : {2048, 8192}) {
      const double forward = m.layers * ForwardLayerFlops(m, 1, s).total() +
                             LogitsForwardFlops(m, 1, s);
      EXPECT_NEAR(3 * forward * 64 / ModelFlopsPerStep(m, 64, s), 1.0, 1e-12)
          << name << " seq " << s;
    }
  }
}

TEST(FlopsTest, RecomputationAddsForwardWork) {
  const ModelConfig m = *ModelPreset("llama2-13b");
  const LayerFlops f = ForwardLayerFlops(m, 2, 4096);
  EXPECT_EQ(RecomputeLayerFlops(m, Recompute::kNone, 2, 4096), 0);
  EXPECT_DOUBLE_EQ(RecomputeLayerFlops(m, Recompute::kSelective, 2, 4096),
                   f.attention_core);
  EXPECT_DOUBLE_EQ(RecomputeLayerFlops(m, Recompute::kFull, 2, 4096),
                   f.total());
  // Full recomputation: 4 forward-equivalents of the layers instead of 3
  // (core's executed FLOPs, from the same parts).
  const double layers_fwd = m.layers * ForwardLayerFlops(m, 8, 4096).total();
  EXPECT_NEAR(HardwareFlopsPerStep(m, 8, 4096, Recompute::kFull) -
                  ModelFlopsPerStep(m, 8, 4096),
              layers_fwd, layers_fwd * 1e-12);
  EXPECT_DOUBLE_EQ(LogitsForwardFlops(m, 2, 4096),
                   2.0 * 2 * 4096 * 5120 * 32000);
}

}  // namespace
}  // namespace tessera::costmodel
