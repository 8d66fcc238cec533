// Saved activations per layer by stack policy (costmodel/memory/
// layer_activations.h), against hand counts: Korthikanti et al. 2022's GPT
// equations under the megatron-2021 stack, and Llama layers under today's
// flash-attention stacks.
#include "costmodel/memory/layer_activations.h"

#include "gtest/gtest.h"

namespace tessera::costmodel {
namespace {

const TrainingStack& Stack(const char* name) { return **FindStack(name); }

// gpt3-175b: h = 12288, a = 96, s = 2048, b = 1: sbh = 2048 * 12288 and
// 5*a*s/h = 5 * 96 * 2048 / 12288 = 80.
class GptActivationsTest : public ::testing::Test {
 protected:
  const ModelConfig m_ = *ModelPreset("gpt3-175b");
  const double sbh_ = 2048.0 * 12288;
  const TrainingStack& stack_ = Stack("megatron-2021");
  const Calibration c_;  // saved_activation_factor 1
};

TEST_F(GptActivationsTest, NoParallelism) {
  // Korthikanti et al. 2022, Eq. 1: sbh * (34 + 5as/h) = sbh * 114.
  const LayerShard shard{.seq_len = 2048};
  EXPECT_DOUBLE_EQ(
      LayerActivationBytes(m_, shard, stack_, Recompute::kNone, c_),
      sbh_ * 114);
}

TEST_F(GptActivationsTest, TensorParallelWithoutSequenceParallel) {
  // Eq. 2, t = 8: sbh * (10 + 24/8 + 5as/(8h)) = sbh * (10 + 3 + 10).
  const LayerShard shard{.tp = 8, .seq_len = 2048};
  EXPECT_DOUBLE_EQ(
      LayerActivationBytes(m_, shard, stack_, Recompute::kNone, c_),
      sbh_ * 23);
}

TEST_F(GptActivationsTest, SequenceParallelAndRecomputation) {
  const LayerShard shard{.tp = 8, .sp = true, .seq_len = 2048};
  // Eq. 4: sbh * (34 + 5as/h) / t = sbh * 114 / 8.
  EXPECT_DOUBLE_EQ(
      LayerActivationBytes(m_, shard, stack_, Recompute::kNone, c_),
      sbh_ * 114 / 8);
  // Eq. 6, selective (the scores dropped): sbh * 34 / t.
  EXPECT_DOUBLE_EQ(
      LayerActivationBytes(m_, shard, stack_, Recompute::kSelective, c_),
      sbh_ * 34 / 8);
  // Full: the layer input, 2sbh / t (2sbh without sequence parallelism).
  EXPECT_DOUBLE_EQ(
      LayerActivationBytes(m_, shard, stack_, Recompute::kFull, c_),
      sbh_ * 2 / 8);
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m_, LayerShard{.tp = 8, .seq_len = 2048},
                                        stack_, Recompute::kFull, c_),
                   sbh_ * 2);
  EXPECT_DOUBLE_EQ(LayerWorkingSetBytes(m_, shard, stack_, c_),
                   sbh_ * 114 / 8);
}

// llama2-70b: h = 8192, a = 64, kv_dim = 1024, ffn = 28672; b = 1, s = 4096,
// t = 1. Per token, 2-byte elements:
//   replicated: layer input, norm 1 out, residual, norm 2 out: 4 * 2h =
//     65,536;
//   split: q 2h = 16,384, k and v 2 * 2 * 1024 = 4,096, attention output 2h
//     + a 4-byte log-sum-exp per head 4 * 64 = 16,640, gate and up 2 * 2ffn
//     = 114,688, down input 2ffn = 57,344: 209,152;
//   unfused SwiGLU's SiLU(gate) 2ffn = 57,344 more (eager PyTorch).
constexpr double kLlama70bFused = 65536 + 209152;
constexpr double kTokens = 4096;

TEST(LlamaActivationsTest, FlashAttentionKeepsNoScores) {
  const ModelConfig m = *ModelPreset("llama2-70b");
  const Calibration c;
  const LayerShard shard{.seq_len = 4096};
  const TrainingStack& mcore = Stack("megatron-core");
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, shard, mcore, Recompute::kNone, c),
                   kTokens * kLlama70bFused);
  // Megatron's selective recomputation re-runs the attention core, whose
  // inputs and output stay saved: with flash attention it frees nothing.
  EXPECT_DOUBLE_EQ(
      LayerActivationBytes(m, shard, mcore, Recompute::kSelective, c),
      kTokens * kLlama70bFused);
  // Eager PyTorch (torchtitan) keeps SiLU(gate) too.
  const TrainingStack& titan = Stack("torchtitan");
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, shard, titan, Recompute::kNone, c),
                   kTokens * (kLlama70bFused + 57344));
  // cp = 2: 2048 tokens per rank, nothing that grows with the keys.
  const LayerShard cp2{.cp = 2, .seq_len = 4096};
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, cp2, mcore, Recompute::kNone, c),
                   2048 * kLlama70bFused);
}

TEST(LlamaActivationsTest, EachStacksSelectivePolicy) {
  const ModelConfig m = *ModelPreset("llama2-70b");
  const Calibration c;
  const LayerShard shard{.seq_len = 4096};
  // torchtitan's per-op policy keeps the layer input 2h, q 2h, v 2*1024, the
  // attention output 2h + 256, the gate 2ffn and the down output 2h:
  // 16,384 * 4 + 2,048 + 256 + 57,344 = 125,184 per token.
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, shard, Stack("torchtitan"),
                                        Recompute::kSelective, c),
                   kTokens * 125184);
  // Tessera's executor drops the attention output and log-sum-exp.
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, shard, Stack("tessera"),
                                        Recompute::kSelective, c),
                   kTokens * (kLlama70bFused - 16640));
  // PyTorch FSDP (fms-fsdp): every other block recomputed in full, so the
  // average of the layer input and the whole eager set.
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, shard, Stack("pytorch-fsdp"),
                                        Recompute::kSelective, c),
                   kTokens * (0.5 * 16384 + 0.5 * (kLlama70bFused + 57344)));
}

TEST(LlamaActivationsTest, Fp8AndTheSavedActivationFactor) {
  const ModelConfig m = *ModelPreset("llama2-70b");
  Calibration c;
  const LayerShard fp8{.seq_len = 4096, .precision = Precision::kFp8};
  // Transformer Engine keeps the four linear inputs in fp8: norm 1 and norm
  // 2 outputs h, the attention output h, the down input ffn, one byte each
  // instead of two: 3 * 8192 + 28672 = 53,248 bytes fewer per token.
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, fp8, Stack("megatron-core"),
                                        Recompute::kNone, c),
                   kTokens * (kLlama70bFused - 53248));
  // torchao float8 keeps bf16 inputs.
  EXPECT_DOUBLE_EQ(
      LayerActivationBytes(m, fp8, Stack("torchtitan"), Recompute::kNone, c),
      LayerActivationBytes(m, LayerShard{.seq_len = 4096}, Stack("torchtitan"),
                           Recompute::kNone, c));
  ASSERT_TRUE(c.Set("saved_activation_factor", 1.25).ok());
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, LayerShard{.seq_len = 4096},
                                        Stack("megatron-core"),
                                        Recompute::kNone, c),
                   1.25 * kTokens * kLlama70bFused);
}

TEST(LlamaActivationsTest, LogitsWorkingSet) {
  const ModelConfig m = *ModelPreset("llama2-70b");
  Calibration c;
  ASSERT_TRUE(c.Set("logits_bytes_per_element", 10).ok());
  // 10 bytes per logit, 4096 tokens over the vocabulary split by tp = 4.
  EXPECT_DOUBLE_EQ(
      LogitsWorkingSetBytes(m, LayerShard{.tp = 4, .seq_len = 4096}, c),
      10 * 4096.0 * 32000 / 4);
}

}  // namespace
}  // namespace tessera::costmodel
