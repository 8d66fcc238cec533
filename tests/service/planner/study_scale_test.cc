// A study that searches its GPU count (spec search.scale,
// service/study_scale.h): the count is chosen when the study is
// submitted, the stored spec and the trials are for that count, and the
// recommendation says which count its figures are for.
#include <string>

#include "gtest/gtest.h"
#include "costmodel/search/scale_search.h"
#include "costmodel/stacks/stack_calibration.h"
#include "proto/convert.h"
#include "service/plan_convert.h"
#include "tests/service/planner/test_harness.h"

namespace tessera::service::testing {
namespace {

grpc::Status SubmitStatus(TestServer& s, const v1::StudySpec& spec,
                          int64_t* id) {
  v1::SubmitStudyRequest r;
  *r.mutable_spec() = spec;
  v1::SubmitStudyResponse out;
  const grpc::Status st = s.planner->SubmitStudy(Context().get(), r, &out);
  *id = out.study_id();
  return st;
}

v1::Recommendation RecommendationOf(TestServer& s, int64_t id) {
  v1::GetRecommendationRequest r;
  r.set_study_id(id);
  v1::Recommendation out;
  const grpc::Status st =
      s.planner->GetRecommendation(Context().get(), r, &out);
  EXPECT_TRUE(st.ok()) << st.error_message();
  return out;
}

// What the planner's count search chooses for `spec` with the defaults (a
// fresh database has no fitted calibration).
int64_t ChosenNodes(const v1::StudySpec& spec) {
  const Workload w = *CheckedWorkloadFromSpec(spec);
  const costmodel::ScaleOptions o = *ScaleOptionsFromSpec(spec.search());
  const costmodel::ScaleResult r =
      *costmodel::SearchScale(w, *costmodel::DefaultCalibration(w), o);
  return r.chosen()->nodes;
}

TEST(StudyScaleTest, TheStudyRunsAtTheChosenCount) {
  TempDir dir;
  ManualClock clock;
  TestServer s = StartServer(TestOptions(dir.File("t.db"), clock));
  ScriptedAgent agent(s, "cpu-a", "cpu", 2);
  ASSERT_TRUE(agent.Register().ok());
  v1::StudySpec spec = TinySpec(4, 2);  // 8 GPUs, 2 per agent
  spec.mutable_search()->mutable_scale()->set_objective("energy");
  spec.mutable_trials()->set_max_trials(1);
  const int64_t chosen = ChosenNodes(spec);
  ASSERT_LT(chosen, 4) << "the toy's least energy uses part of the cluster";
  // Counts given with a spec whose count is not chosen yet are the
  // planner's to set: replaced.
  spec.mutable_search()->mutable_scale()->add_counts()->set_nodes(99);
  int64_t id = 0;
  ASSERT_TRUE(SubmitStatus(s, spec, &id).ok());
  // The stored spec is the chosen count's, the cluster kept beside it.
  v1::GetStudyRequest get;
  get.set_study_id(id);
  v1::GetStudyResponse study;
  ASSERT_TRUE(s.planner->GetStudy(Context().get(), get, &study).ok());
  EXPECT_EQ(study.spec().cluster().nodes(), chosen);
  EXPECT_EQ(study.spec().search().scale().cluster_nodes(), 4);
  // Every count searched (the ladder 1, 2, 3, 4) is kept with the spec: the
  // chosen one on the front, each with its best layout on its own GPUs.
  const auto& counts = study.spec().search().scale().counts();
  ASSERT_EQ(counts.size(), 4);
  int chosen_counts = 0;
  for (int i = 0; i < counts.size(); ++i) {
    const v1::ScaleSearchCount& c = counts[i];
    EXPECT_EQ(c.nodes(), i + 1);
    EXPECT_EQ(c.gpus(), 2 * (i + 1));
    if (!c.skipped().empty()) continue;
    EXPECT_EQ(LayoutFromProto(c.layout())->world_size(), c.gpus());
    EXPECT_GT(c.joules_per_token(), 0);
    EXPECT_GT(c.seconds_per_token(), 0);
    EXPECT_TRUE(c.has_full_run());
    if (c.chosen()) {
      ++chosen_counts;
      EXPECT_EQ(c.nodes(), chosen);
      EXPECT_TRUE(c.on_front());
    }
  }
  EXPECT_EQ(chosen_counts, 1);
  // Its trial runs a layout of the chosen count's world.
  std::optional<v1::TrialAssignment> a = agent.Lease();
  ASSERT_TRUE(a.has_value());
  const Layout layout = *LayoutFromProto(a->layout());
  EXPECT_LE(layout.world_size(), chosen * 2);
  ASSERT_TRUE(agent.Report(a->trial_id(), OkResultJson(*a, 0.05)).ok());
  const v1::Recommendation r = RecommendationOf(s, id);
  ASSERT_TRUE(r.has_scale());
  EXPECT_EQ(r.scale().nodes(), chosen);
  EXPECT_EQ(r.scale().gpus(), chosen * 2);
  EXPECT_EQ(r.scale().cluster_nodes(), 4);
  EXPECT_EQ(r.scale().cluster_gpus(), 8);
  EXPECT_EQ(r.scale().objective(), "energy");
  EXPECT_FALSE(r.scale().charge_idle_gpus());
  // The recommendation carries the counts for the report's plot.
  ASSERT_EQ(r.scale().counts().size(), counts.size());
  for (int i = 0; i < counts.size(); ++i) {
    EXPECT_EQ(r.scale().counts()[i].SerializeAsString(),
              counts[i].SerializeAsString());
  }
  // Every figure is for the chosen count: the layouts span its GPUs.
  EXPECT_EQ(LayoutFromProto(r.best_throughput().layout())->world_size(),
            chosen * 2);
}

TEST(StudyScaleTest, WithoutScaleTheWholeClusterAndNoScaleNote) {
  TempDir dir;
  ManualClock clock;
  TestServer s = StartServer(TestOptions(dir.File("t.db"), clock));
  v1::StudySpec spec = TinySpec(4, 2);
  spec.mutable_trials()->set_max_trials(0);
  int64_t id = 0;
  ASSERT_TRUE(SubmitStatus(s, spec, &id).ok());
  const v1::Recommendation r = RecommendationOf(s, id);
  EXPECT_FALSE(r.has_scale());
  EXPECT_EQ(LayoutFromProto(r.best_throughput().layout())->world_size(), 8);
}

TEST(StudyScaleTest, BadScaleOptionsAreRefusedNamingTheField) {
  TempDir dir;
  ManualClock clock;
  TestServer s = StartServer(TestOptions(dir.File("t.db"), clock));
  v1::StudySpec spec = TinySpec(4, 2);
  spec.mutable_search()->mutable_scale()->add_node_counts(9);
  int64_t id = 0;
  grpc::Status st = SubmitStatus(s, spec, &id);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("search.scale.node_counts: 9 nodes"),
            std::string::npos)
      << st.error_message();
  spec = TinySpec(4, 2);
  spec.mutable_search()->mutable_scale()->set_objective("watts");
  st = SubmitStatus(s, spec, &id);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("search.scale.objective: 'watts'"),
            std::string::npos)
      << st.error_message();
}

}  // namespace
}  // namespace tessera::service::testing
