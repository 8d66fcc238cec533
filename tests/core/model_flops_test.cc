#include "core/model_flops.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

// GPT-3 175B at s = 2048: Megatron's count 72*B*s*l*h^2*(1 + s/(6h) +
// V/(12*l*h)) (Narayanan et al. SC'21, eq. 3 without recomputation) for a GPT
// block (4h MLP, MHA) equals ours when biases and norms are ignored.
TEST(ModelFlopsTest, MatchesMegatronFormulaForGpt) {
  const ModelConfig m = *ModelPreset("gpt3-175b");
  const double B = 1536, s = 2048, l = 96, h = 12288, V = 51200;
  const double megatron =
      72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  EXPECT_NEAR(ModelFlopsPerStep(m, 1536, 2048) / megatron, 1.0, 1e-12);
  // With full recomputation the table counts 96 instead of 72 for the layers
  // (4 passes instead of 3); the output layer is not recomputed.
  const double with_recompute =
      96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  EXPECT_NEAR(
      HardwareFlopsPerStep(m, 1536, 2048, Recompute::kFull) / with_recompute,
      1.0, 1e-12);
}

// Llama 3 8B by hand: matmul params = 32 * (41,943,040 + 176,160,768) +
// 128256 * 4096 = 7,504,658,432; per token forward = 2 * that + 4 * 8192 *
// 4096 * 32 (s = 8192).
TEST(ModelFlopsTest, LlamaByHand) {
  const ModelConfig m = *ModelPreset("llama3-8b");
  EXPECT_EQ(MatmulParams(m), 7504658432);
  EXPECT_DOUBLE_EQ(ForwardFlopsPerToken(m, 8192),
                   2.0 * 7504658432 + 4.0 * 8192 * 4096 * 32);
  EXPECT_DOUBLE_EQ(ModelFlopsPerStep(m, 2, 8192),
                   3.0 * ForwardFlopsPerToken(m, 8192) * 2 * 8192);
  EXPECT_DOUBLE_EQ(HardwareFlopsPerStep(m, 2, 8192, Recompute::kSelective) -
                       ModelFlopsPerStep(m, 2, 8192),
                   4.0 * 8192 * 4096 * 32 * 2 * 8192);
  EXPECT_DOUBLE_EQ(HardwareFlopsPerStep(m, 2, 8192, Recompute::kNone),
                   ModelFlopsPerStep(m, 2, 8192));
}

}  // namespace
}  // namespace tessera
