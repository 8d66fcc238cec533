#include "planner/activations.h"

#include "gtest/gtest.h"

namespace tessera::planner {
namespace {

// gpt3-175b: h = 12288, a = 96, s = 2048, b = 1: sbh = 2048 * 12288 and
// 5*a*s/h = 5 * 96 * 2048 / 12288 = 80.
class GptActivationsTest : public ::testing::Test {
 protected:
  const ModelConfig m_ = *ModelPreset("gpt3-175b");
  const double sbh_ = 2048.0 * 12288;
};

TEST_F(GptActivationsTest, NoParallelism) {
  // Korthikanti et al. 2022, Eq. 1: sbh * (34 + 5as/h) = sbh * 114.
  const LayerShard shard{.seq_len = 2048};
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m_, shard, Recompute::kNone),
                   sbh_ * 114);
}

TEST_F(GptActivationsTest, TensorParallelWithoutSequenceParallel) {
  // Eq. 2, t = 8: sbh * (10 + 24/8 + 5as/(8h)) = sbh * (10 + 3 + 10).
  const LayerShard shard{.tp = 8, .seq_len = 2048};
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m_, shard, Recompute::kNone),
                   sbh_ * 23);
}

TEST_F(GptActivationsTest, SequenceParallelAndRecomputation) {
  const LayerShard shard{.tp = 8, .sp = true, .seq_len = 2048};
  // Eq. 4: sbh * (34 + 5as/h) / t = sbh * 114 / 8.
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m_, shard, Recompute::kNone),
                   sbh_ * 114 / 8);
  // Eq. 6, selective: sbh * 34 / t.
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m_, shard, Recompute::kSelective),
                   sbh_ * 34 / 8);
  // Full: the layer input, 2sbh / t (2sbh without sequence parallelism).
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m_, shard, Recompute::kFull),
                   sbh_ * 2 / 8);
  EXPECT_DOUBLE_EQ(
      LayerActivationBytes(m_, LayerShard{.tp = 8, .seq_len = 2048},
                           Recompute::kFull),
      sbh_ * 2);
  EXPECT_DOUBLE_EQ(LayerWorkingSetBytes(m_, shard), sbh_ * 114 / 8);
}

TEST(LlamaActivationsTest, SwigluAndGqaByHand) {
  // llama2-70b: h = 8192, a = 64, kv_dim = 1024, ffn = 28672; b = 1,
  // s = 4096, t = 1. Per token:
  //   replicated 8h = 65,536; split 2h + 4*1024 + 2h + 6*28672 = 16,384 +
  //   4,096 + 16,384 + 172,032 = 208,896; scores 2*a*s = 524,288.
  const ModelConfig m = *ModelPreset("llama2-70b");
  const double tokens = 4096;
  const LayerShard shard{.seq_len = 4096};
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, shard, Recompute::kNone),
                   tokens * (65536 + 208896 + 524288));
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, shard, Recompute::kSelective),
                   tokens * (65536 + 208896));
  // cp = 2: 2048 tokens per rank, scores of 2048 queries x 4096 keys.
  const LayerShard cp2{.cp = 2, .seq_len = 4096};
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, cp2, Recompute::kNone),
                   2048 * (65536 + 208896 + 524288.0));
  // Logits, fp32 over the vocabulary split by tp = 4: 4 * 4096 * 32000 / 4.
  EXPECT_DOUBLE_EQ(
      LogitsActivationBytes(m, LayerShard{.tp = 4, .seq_len = 4096}),
      4096.0 * 32000);
}

}  // namespace
}  // namespace tessera::planner
