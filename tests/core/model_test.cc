#include "core/model.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

// Published parameter counts: Llama 2 7B = 6.74e9, 13B = 13.0e9, 70B = 69.0e9;
// Llama 3 8B = 8.03e9, 70B = 70.6e9, 405B = 405.9e9 (Dubey et al. 2024, and the
// released checkpoints); GPT-3 175B = 174.6e9 and 530B = 529.6e9 as in
// shared/data/megatron_ptdp_2021.json.
TEST(ModelTest, PresetParameterCountsMatchPublishedFigures) {
  const std::pair<const char*, double> published[] = {
      {"llama2-7b", 6.738e9},   {"llama2-13b", 13.016e9},
      {"llama2-70b", 68.977e9}, {"llama3-8b", 8.030e9},
      {"llama3-70b", 70.554e9}, {"llama3-405b", 405.85e9},
      {"gpt3-175b", 174.6e9},   {"gpt-530b", 529.6e9}};
  for (const auto& [name, params] : published) {
    absl::StatusOr<ModelConfig> m = ModelPreset(name);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_NEAR(m->ParamCount() / params, 1.0, 0.005) << name;
    EXPECT_TRUE(ValidateModel(*m).ok()) << name;
  }
}

TEST(ModelTest, TinyParamsByHand) {
  absl::StatusOr<ModelConfig> m = ModelPreset("tiny");
  ASSERT_TRUE(m.ok());
  // h=128, kv_dim = 4 heads * 16 = 64: q,o 128*128 each, k,v 128*64 each.
  EXPECT_EQ(m->AttentionParamsPerLayer(), 2 * 16384 + 2 * 8192);
  EXPECT_EQ(m->MlpParamsPerLayer(), 3 * 128 * 352);
  EXPECT_EQ(m->ParamsPerLayer(), 49152 + 135168 + 256);
  EXPECT_EQ(m->ParamCount(), 512 * 128 + 4 * 184576 + 512 * 128 + 128);
}

TEST(ModelTest, UnknownPresetNamesIt) {
  absl::StatusOr<ModelConfig> m = ModelPreset("llama9-1t");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(m.status().message().find("llama9-1t"), std::string::npos);
  EXPECT_NE(m.status().message().find("llama2-7b"), std::string::npos);
}

TEST(ModelTest, ValidationNamesTheField) {
  ModelConfig m = *ModelPreset("llama2-7b");
  m.kv_heads = 5;
  absl::Status s = ValidateModel(m);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("model.kv_heads"), std::string::npos) << s;
  m = *ModelPreset("llama2-7b");
  m.vocab = 0;
  EXPECT_NE(ValidateModel(m).message().find("model.vocab"), std::string::npos);
  m = *ModelPreset("llama2-7b");
  m.heads = 31;
  EXPECT_NE(ValidateModel(m).message().find("model.heads"), std::string::npos);
}

TEST(ModelTest, MlpKindRoundTrip) {
  EXPECT_EQ(*ParseMlpKind("gelu"), MlpKind::kGelu);
  EXPECT_EQ(MlpKindName(*ParseMlpKind("swiglu")), "swiglu");
  EXPECT_FALSE(ParseMlpKind("relu").ok());
}

}  // namespace
}  // namespace tessera
