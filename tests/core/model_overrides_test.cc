#include "core/model_overrides.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

bool Names(const absl::Status& s, absl::string_view field) {
  return s.message().find(field) != absl::string_view::npos;
}

TEST(ModelOverridesTest, PresetAlone) {
  absl::StatusOr<ModelConfig> m = ResolveModel("llama3-8b", {});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->name, "llama3-8b");
  EXPECT_EQ(m->kv_heads, 8);
}

TEST(ModelOverridesTest, OverrideMakesItCustom) {
  ModelOverrides o;
  o.layers = 2;
  absl::StatusOr<ModelConfig> m = ResolveModel("llama3-8b", o);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->name, "custom");
  EXPECT_EQ(m->layers, 2);
  EXPECT_EQ(m->hidden, 4096);
  EXPECT_EQ(m->rope_theta, 500000);
  o.layers = 32;  // the preset's own value changes nothing
  EXPECT_EQ(ResolveModel("llama3-8b", o)->name, "llama3-8b");
}

TEST(ModelOverridesTest, ExplicitDimensions) {
  ModelOverrides o;
  o.layers = 2;
  o.hidden = 64;
  o.heads = 4;
  o.ffn_hidden = 128;
  o.vocab = 100;
  absl::StatusOr<ModelConfig> m = ResolveModel(std::nullopt, o);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->kv_heads, 4);  // defaults to heads
  EXPECT_EQ(m->mlp, MlpKind::kSwiGlu);
  EXPECT_EQ(m->name, "custom");
  o.vocab.reset();
  EXPECT_TRUE(Names(ResolveModel(std::nullopt, o).status(), "model.vocab"));
}

TEST(ModelOverridesTest, ErrorsNameTheField) {
  EXPECT_TRUE(Names(ResolveModel("llama9", {}).status(), "model.preset"));
  EXPECT_TRUE(Names(ResolveModel(std::nullopt, {}).status(), "give a preset"));
  ModelOverrides o;
  o.layers = 0;
  EXPECT_TRUE(Names(ResolveModel("tiny", o).status(), "model.layers"));
  o = {};
  o.kv_heads = 3;
  EXPECT_TRUE(Names(ResolveModel("tiny", o).status(), "model.kv_heads"));
  o = {};
  o.mlp = "relu";
  EXPECT_TRUE(Names(ResolveModel("tiny", o).status(), "model.mlp"));
  o = {};
  o.rope_theta = -1;
  EXPECT_TRUE(Names(ResolveModel("tiny", o).status(), "model.rope_theta"));
}

}  // namespace
}  // namespace tessera
