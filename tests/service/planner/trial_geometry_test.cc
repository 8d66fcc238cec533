// Trial geometry against hand computations.
#include "service/trial_geometry.h"

#include "gtest/gtest.h"

namespace tessera::service {
namespace {

// llama2-7b on 4 nodes x 8 H100s, 64 sequences of 4096 per step.
Workload Study() {
  return Workload{*ModelPreset("llama2-7b"),
                  MakeCluster(*GpuPreset("h100-sxm"), 4, 8),
                  TrainingConfig{.global_batch = 64, .seq_len = 4096}};
}

Layout Resolved(absl::string_view text, const Workload& w) {
  absl::StatusOr<Layout> l = ParseLayout(text);
  EXPECT_TRUE(l.ok()) << l.status();
  absl::StatusOr<Layout> r =
      ResolveLayout(*l, w.cluster.world_size(), w.training.global_batch);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

TEST(TrialGeometryTest, WithEnoughAgentsTheTrialIsTheLayout) {
  const Workload w = Study();
  const Layout l = Resolved("tp=2,micro_batch=1,zero=1", w);  // dp 16
  absl::StatusOr<TrialPlan> p = PlanTrial(w, l, /*available_agents=*/9, 0);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->layout, l);
  EXPECT_EQ(p->gang_size, 4);
  EXPECT_EQ(p->ranks_per_agent, 8);
  EXPECT_EQ(p->world_size(), 32);
  EXPECT_FALSE(p->scaled());
  EXPECT_EQ(p->workload.training.global_batch, 64);
}

TEST(TrialGeometryTest, FewerAgentsScaleTheDataParallelDegree) {
  const Workload w = Study();
  // tp 2: dp 16, grad_accum 64 / (1 * 16) = 4.
  const Layout l = Resolved("tp=2,micro_batch=1,zero=3", w);
  ASSERT_EQ(l.dp, 16);
  ASSERT_EQ(l.grad_accum, 4);
  absl::StatusOr<TrialPlan> p = PlanTrial(w, l, /*available_agents=*/2, 0);
  ASSERT_TRUE(p.ok()) << p.status();
  // 2 agents x 8 ranks = 16 ranks: dp' = 16 / 2 = 8.
  EXPECT_EQ(p->layout.dp, 8);
  EXPECT_EQ(p->layout.tp, 2);
  EXPECT_EQ(p->layout.grad_accum, 4);
  EXPECT_EQ(p->layout.shard_group, 8);  // whole-group sharding stays whole
  EXPECT_EQ(p->gang_size, 2);
  EXPECT_EQ(p->workload.cluster.nodes, 2);
  // global batch' = micro_batch * dp' * grad_accum = 1 * 8 * 4.
  EXPECT_EQ(p->workload.training.global_batch, 32);
  EXPECT_EQ(p->note, "measured at dp 8 of 16");
  EXPECT_EQ(p->study_dp, 16);
  // And back.
  absl::StatusOr<Layout> back = StudyLayoutOfTrial(w, p->layout);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, l);
  absl::StatusOr<TrialPlan> again = PlanOfTrialLayout(w, p->layout, 0);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->layout, p->layout);
  EXPECT_EQ(again->gang_size, 2);
}

TEST(TrialGeometryTest, TheTrialFillsWholeAgents) {
  // tiny on 3 nodes x 4 ranks, 48 sequences per step.
  const Workload w{*ModelPreset("tiny"),
                   MakeCluster(*GpuPreset("h100-sxm"), 3, 4),
                   TrainingConfig{.global_batch = 48, .seq_len = 128}};
  // tp 2: dp' in steps of 4 / gcd(2, 4) = 2, at most 2 * 4 / 2 = 4.
  const Layout tp2 = Resolved("tp=2", w);
  ASSERT_EQ(tp2.dp, 6);
  absl::StatusOr<TrialPlan> p = PlanTrial(w, tp2, 2, 0);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->layout.dp, 4);
  EXPECT_EQ(p->gang_size, 2);
  EXPECT_EQ(p->workload.training.global_batch, 1 * 4 * tp2.grad_accum);
  // pp 3: 3 * dp' must be a multiple of 4, so dp' in steps of 4, at most
  // 2 * 4 / 3 = 2: it needs 3 agents.
  const Layout pp3 = Resolved("pp=3", w);
  absl::StatusOr<TrialPlan> q = PlanTrial(w, pp3, 2, 0);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().message(),
            "tp*pp*cp = 3 ranks need 3 agents of 4 ranks, 2 available");
}

TEST(TrialGeometryTest, AModelParallelGroupLargerThanTheAgentsIsNotTrialable) {
  const Workload w = Study();
  const Layout l = Resolved("tp=8,pp=2", w);  // 16 ranks per replica
  absl::StatusOr<TrialPlan> p = PlanTrial(w, l, /*available_agents=*/1, 0);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(p.status().message(),
            "tp*pp*cp = 16 ranks need 2 agents of 8 ranks, 1 available");
  EXPECT_TRUE(PlanTrial(w, l, 2, 0).ok());
}

TEST(TrialGeometryTest, FewerLayersKeepTheWidthsAndMustHoldThePipeline) {
  const Workload w = Study();
  const Layout l = Resolved("tp=8,pp=4", w);
  absl::StatusOr<TrialPlan> two = PlanTrial(w, l, 4, /*layers=*/2);
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(two.status().message().find("layout.pp"), std::string::npos)
      << two.status().message();
  absl::StatusOr<TrialPlan> four = PlanTrial(w, l, 4, /*layers=*/4);
  ASSERT_TRUE(four.ok()) << four.status();
  EXPECT_EQ(four->workload.model.layers, 4);
  EXPECT_EQ(four->workload.model.hidden, 4096);
  EXPECT_EQ(four->workload.model.name, "custom");
  EXPECT_EQ(four->note, "measured with 4 of 32 layers");
}

TEST(TrialGeometryTest, HsdpGroupsThatDoNotDivideTheTrialsDpAreNotTrialable) {
  const Workload w = Study();
  // dp 32 sharded in groups of 16; with 1 agent dp' = 8.
  const Layout l = Resolved("zero=3,shard_group=16,micro_batch=2", w);
  absl::StatusOr<TrialPlan> p = PlanTrial(w, l, 1, 0);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "HSDP shard_group 16 does not divide the trial's dp 8");
  // Groups of 4 do divide it and are kept.
  const Layout four = Resolved("zero=3,shard_group=4,micro_batch=2", w);
  absl::StatusOr<TrialPlan> q = PlanTrial(w, four, 1, 0);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->layout.shard_group, 4);
  EXPECT_EQ(q->layout.dp, 8);
  EXPECT_EQ(*StudyLayoutOfTrial(w, q->layout), four);
}

}  // namespace
}  // namespace tessera::service
