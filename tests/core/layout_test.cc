#include "core/layout.h"

#include "core/layout_json.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

bool Names(const absl::Status& s, absl::string_view field) {
  return s.message().find(field) != absl::string_view::npos;
}

TEST(LayoutTest, ParsesEveryField) {
  absl::StatusOr<Layout> l = ParseLayout(
      " tp=2, sp=1,pp=4,vpp=2,cp=2,dp=4,zero=3,shard_group=2,micro_batch=1,"
      "grad_accum=8,recompute=selective");
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->tp, 2);
  EXPECT_TRUE(l->sp);
  EXPECT_EQ(l->pp, 4);
  EXPECT_EQ(l->vpp, 2);
  EXPECT_EQ(l->cp, 2);
  EXPECT_EQ(l->dp, 4);
  EXPECT_EQ(l->zero, 3);
  EXPECT_EQ(l->shard_group, 2);
  EXPECT_EQ(l->micro_batch, 1);
  EXPECT_EQ(l->grad_accum, 8);
  EXPECT_EQ(l->recompute, Recompute::kSelective);
  EXPECT_EQ(*ParseLayout(FormatLayout(*l)), *l);
}

TEST(LayoutTest, UnresolvedLayoutRoundTrips) {
  const Layout l{.tp = 2, .zero = 3};  // dp, grad_accum, shard_group = 0
  EXPECT_EQ(*ParseLayout(FormatLayout(l)), l);
  EXPECT_TRUE(Names(ParseLayout("tp=0").status(), "layout.tp"));
  EXPECT_TRUE(
      Names(ParseLayout("micro_batch=0").status(), "layout.micro_batch"));
}

TEST(LayoutTest, OmittedFieldsKeepDefaults) {
  absl::StatusOr<Layout> l = ParseLayout("zero=1");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(*l, (Layout{.zero = 1}));
  EXPECT_EQ(*ParseLayout(""), Layout{});
}

TEST(LayoutTest, MalformedTextNamesTheField) {
  EXPECT_TRUE(Names(ParseLayout("tp=0").status(), "layout.tp"));
  EXPECT_TRUE(Names(ParseLayout("tp=two").status(), "layout.tp"));
  EXPECT_TRUE(Names(ParseLayout("tp=2x").status(), "layout.tp"));
  EXPECT_TRUE(Names(ParseLayout("zero=4").status(), "layout.zero"));
  EXPECT_TRUE(Names(ParseLayout("sp=yes").status(), "layout.sp"));
  EXPECT_TRUE(
      Names(ParseLayout("recompute=some").status(), "layout.recompute"));
  EXPECT_TRUE(Names(ParseLayout("tq=2").status(), "'tq'"));
  EXPECT_TRUE(Names(ParseLayout("tp").status(), "key=value"));
  EXPECT_TRUE(Names(ParseLayout("tp=2,tp=4").status(), "given twice"));
  EXPECT_TRUE(Names(ParseLayout("tp=2,,pp=2").status(), "empty field"));
  EXPECT_TRUE(
      Names(ParseLayout("tp=99999999999999999999").status(), "layout.tp"));
}

TEST(LayoutTest, ResolveDerivesDpAndGradAccum) {
  absl::StatusOr<Layout> l = ResolveLayout(
      Layout{.tp = 2, .pp = 2, .zero = 3, .micro_batch = 2}, 64, 512);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->dp, 16);
  EXPECT_EQ(l->grad_accum, 512 / (2 * 16));
  EXPECT_EQ(l->shard_group, 16);
  EXPECT_EQ(l->replicas(), 1);
  EXPECT_EQ(l->world_size(), 64);
  // Resolving a resolved layout changes nothing.
  EXPECT_EQ(*ResolveLayout(*l, 64, 512), *l);
}

TEST(LayoutTest, ResolveRejectsWithTheField) {
  EXPECT_TRUE(
      Names(ResolveLayout(Layout{.tp = 3}, 16, 64).status(), "layout.tp"));
  EXPECT_TRUE(
      Names(ResolveLayout(Layout{.dp = 4}, 16, 64).status(), "layout.dp"));
  // 100 sequences over dp 16 with micro_batch 1: not reachable.
  EXPECT_TRUE(
      Names(ResolveLayout(Layout{}, 16, 100).status(), "not reachable"));
  EXPECT_TRUE(Names(ResolveLayout(Layout{.grad_accum = 3}, 16, 64).status(),
                    "layout.grad_accum"));
  EXPECT_TRUE(
      Names(ResolveLayout(Layout{.sp = true}, 16, 64).status(), "layout.sp"));
  EXPECT_TRUE(
      Names(ResolveLayout(Layout{.vpp = 2}, 16, 64).status(), "layout.vpp"));
  // 4 micro-batches on 8 stages cannot interleave.
  EXPECT_TRUE(Names(ResolveLayout(Layout{.pp = 8, .vpp = 2}, 16, 8).status(),
                    "layout.vpp"));
  EXPECT_TRUE(
      Names(ResolveLayout(Layout{.zero = 3, .shard_group = 3}, 16, 64).status(),
            "layout.shard_group"));
  EXPECT_TRUE(Names(ResolveLayout(Layout{.shard_group = 2}, 16, 64).status(),
                    "layout.shard_group"));
  EXPECT_FALSE(ResolveLayout(Layout{}, 0, 64).ok());
}

TEST(LayoutTest, HsdpReplicas) {
  absl::StatusOr<Layout> l =
      ResolveLayout(Layout{.zero = 3, .shard_group = 8}, 64, 64);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->replicas(), 8);
  EXPECT_EQ(ResolveLayout(Layout{}, 8, 8)->replicas(), 8);
}

TEST(LayoutTest, FitsModelChecksDivisibility) {
  const ModelConfig m = *ModelPreset("llama2-70b");  // 64 heads, 8 kv heads
  EXPECT_TRUE(CheckLayoutFitsModel(Layout{.tp = 8}, m, 4096).ok());
  EXPECT_TRUE(
      Names(CheckLayoutFitsModel(Layout{.tp = 16}, m, 4096), "kv_heads"));
  EXPECT_TRUE(
      Names(CheckLayoutFitsModel(Layout{.pp = 81}, m, 4096), "layout.pp"));
  EXPECT_TRUE(CheckLayoutFitsModel(Layout{.pp = 3}, m, 4096).ok());  // uneven
  EXPECT_TRUE(Names(CheckLayoutFitsModel(Layout{.pp = 3, .vpp = 2}, m, 4096),
                    "layout.vpp"));
  // Stacks that size each model chunk run uneven interleaving, not more
  // chunks than layers.
  EXPECT_TRUE(CheckLayoutFitsModel(Layout{.pp = 3, .vpp = 2}, m, 4096,
                                   /*allow_uneven_interleaving=*/true)
                  .ok());
  EXPECT_TRUE(Names(CheckLayoutFitsModel(Layout{.pp = 41, .vpp = 2}, m, 4096,
                                         /*allow_uneven_interleaving=*/true),
                    "layout.vpp"));
  EXPECT_TRUE(
      Names(CheckLayoutFitsModel(Layout{.cp = 3}, m, 4096), "layout.cp"));
  EXPECT_TRUE(CheckLayoutFitsModel(Layout{.cp = 4}, m, 4096).ok());
  EXPECT_TRUE(
      Names(CheckLayoutFitsModel(Layout{.tp = 8, .sp = true, .cp = 2}, m, 8),
            "layout.sp"));
}

TEST(LayoutTest, StageLayersCoverEveryLayerOnce) {
  for (int64_t layers : {1, 7, 32, 80, 126}) {
    for (int64_t pp : {1, 2, 3, 4, 7, 16}) {
      if (pp > layers) continue;
      for (int64_t vpp : {1, 2, 3, 4, 5}) {
        if (pp * vpp > layers) continue;
        // Each stage's count is the sum over its chunks.
        for (int64_t stage = 0; stage < pp; ++stage) {
          int64_t sum = 0;
          for (int64_t chunk = 0; chunk < vpp; ++chunk) {
            sum += StageLayers(layers, pp, vpp, stage, chunk).size();
          }
          EXPECT_EQ(StageLayerCount(layers, pp, vpp, stage), sum)
              << layers << " layers, pp " << pp << ", vpp " << vpp
              << ", stage " << stage;
        }
        int64_t next = 0;
        // Model chunk order: chunk-major, then stage.
        for (int64_t chunk = 0; chunk < vpp; ++chunk) {
          for (int64_t stage = 0; stage < pp; ++stage) {
            LayerRange r = StageLayers(layers, pp, vpp, stage, chunk);
            EXPECT_EQ(r.begin, next);
            EXPECT_GE(r.size(), layers / (pp * vpp));
            EXPECT_LE(r.size(), layers / (pp * vpp) + 1);
            next = r.end;
          }
        }
        EXPECT_EQ(next, layers);
      }
    }
  }
  // 80 layers on 3 stages: 26, 27, 27 (the first stage is the lighter end).
  EXPECT_EQ(StageLayers(80, 3, 1, 0, 0).size(), 26);
  EXPECT_EQ(StageLayers(80, 3, 1, 1, 0).size(), 27);
  EXPECT_EQ(StageLayers(80, 3, 1, 2, 0).size(), 27);
  // Llama 3 405B (Dubey et al. 2024): 126 layers on 16 stages, 7 on the first
  // and the last, 8 on the others.
  EXPECT_EQ(StageLayers(126, 16, 1, 0, 0).size(), 7);
  EXPECT_EQ(StageLayers(126, 16, 1, 1, 0).size(), 8);
  EXPECT_EQ(StageLayers(126, 16, 1, 14, 0).size(), 8);
  EXPECT_EQ(StageLayers(126, 16, 1, 15, 0).size(), 7);
  // Interleaved and uneven: 126 layers as 16 x 2 chunks of 4 but the first
  // (stage 0, chunk 0) and the last (stage 15, chunk 1), which hold 3: 32 * 4
  // - 126 = 2 short chunks.
  EXPECT_EQ(StageLayers(126, 16, 2, 0, 0).size(), 3);
  EXPECT_EQ(StageLayers(126, 16, 2, 15, 1).size(), 3);
  EXPECT_EQ(StageLayers(126, 16, 2, 1, 0).size(), 4);
  EXPECT_EQ(StageLayers(126, 16, 2, 15, 1).end, 126);
  // Interleaved: stage 1, chunk 1 of 8 layers on pp=2, vpp=2 holds layers 6-7.
  EXPECT_EQ(StageLayers(8, 2, 2, 1, 1).begin, 6);
}

TEST(LayoutJsonTest, RoundTrip) {
  Layout l{.tp = 4,
           .sp = true,
           .pp = 2,
           .dp = 8,
           .zero = 1,
           .shard_group = 8,
           .micro_batch = 2,
           .grad_accum = 4,
           .recompute = Recompute::kFull};
  nlohmann::json j = LayoutToJson(l);
  EXPECT_EQ(j["recompute"], "full");
  EXPECT_EQ(j["sp"], true);
  EXPECT_EQ(*LayoutFromJson(j), l);
}

TEST(LayoutJsonTest, RejectsUnknownAndMistyped) {
  EXPECT_TRUE(Names(LayoutFromJson({{"tq", 2}}).status(), "'tq'"));
  EXPECT_TRUE(Names(LayoutFromJson({{"tp", "2"}}).status(), "layout.tp"));
  EXPECT_TRUE(Names(LayoutFromJson({{"tp", 0}}).status(), "layout.tp"));
  EXPECT_TRUE(Names(LayoutFromJson({{"zero", 5}}).status(), "layout.zero"));
  EXPECT_TRUE(Names(LayoutFromJson({{"sp", 1}}).status(), "layout.sp"));
  EXPECT_FALSE(LayoutFromJson(nlohmann::json::array()).ok());
}

}  // namespace
}  // namespace tessera
