// Rejected calls: the right status code, the field named, nothing written.
#include <functional>
#include <string>

#include "gtest/gtest.h"
#include "service/planner.h"
#include "tests/service/planner/test_harness.h"

namespace tessera::service::testing {
namespace {

class ValidationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    s_ = StartServer(TestOptions(dir_.File("t.db"), clock_));
  }

  grpc::Status Submit(const v1::StudySpec& spec) {
    v1::SubmitStudyRequest r;
    *r.mutable_spec() = spec;
    v1::SubmitStudyResponse out;
    return s_.planner->SubmitStudy(Context().get(), r, &out);
  }

  TempDir dir_;
  ManualClock clock_;
  TestServer s_;
};

TEST_F(ValidationTest, AMalformedSpecNamesTheFieldAndWritesNothing) {
  struct Case {
    std::function<void(v1::StudySpec&)> edit;
    std::string message_prefix;
  };
  const Case cases[] = {
      {[](v1::StudySpec& s) { s.mutable_cluster()->set_nodes(0); },
       "study.cluster.nodes: "},
      {[](v1::StudySpec& s) { s.mutable_model()->set_preset("llama9"); },
       "study.model.preset: "},
      {[](v1::StudySpec& s) { s.mutable_training()->set_global_batch(0); },
       "study.training.global_batch: "},
      {[](v1::StudySpec& s) { s.mutable_search()->set_top(-1); },
       "study.search.top: "},
      // Names reach every user's terminal (the review's 3 MB names broke
      // `tessera studies`; escape codes reached terminals).
      {[](v1::StudySpec& s) { s.set_name(std::string(3 << 20, 'n')); },
       "study.name: at most 200 bytes"},
      {[](v1::StudySpec& s) { s.set_name("x\x1b[2Jy"); },
       "study.name: control character 0x1b"},
      // tiny on 64 GPUs of 2-token sequences: tp <= 8 heads, pp <= 4
      // layers, cp 1, so dp >= 2 cannot split 7 sequences.
      {[](v1::StudySpec& s) {
         s.mutable_cluster()->set_nodes(8);
         s.mutable_cluster()->set_gpus_per_node(8);
         s.mutable_training()->set_seq_len(2);
         s.mutable_training()->set_global_batch(7);
       },
       "study.training.global_batch: "},
      {[](v1::StudySpec& s) { s.mutable_trials()->set_eta(1); },
       "study.trials.eta: "},
      {[](v1::StudySpec& s) { s.mutable_trials()->set_backend("tpu"); },
       "study.trials.backend: "},
      {[](v1::StudySpec& s) { s.mutable_trials()->set_layers(99); },
       "study.trials.layers: "},
      {[](v1::StudySpec& s) { s.mutable_trials()->set_max_trials(-1); },
       "study.trials.max_trials: "},
      {[](v1::StudySpec& s) {
         s.mutable_cluster()->mutable_gpu()->set_preset("agents");
         s.mutable_cluster()->mutable_gpu()->set_memory_bytes(0);
       },
       "study.cluster.gpu.memory_bytes: "},
  };
  for (const Case& c : cases) {
    v1::StudySpec spec = TinySpec(1, 2);
    c.edit(spec);
    const grpc::Status s = Submit(spec);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << c.message_prefix;
    EXPECT_EQ(s.error_message().rfind(c.message_prefix, 0), 0u)
        << s.error_message();
  }
  EXPECT_EQ(CountStudies(s_), 0);
  // A plan of a bad spec is refused the same way.
  v1::PlanRequest plan;
  *plan.mutable_study() = TinySpec(1, 2);
  plan.mutable_study()->mutable_cluster()->set_gpus_per_node(-3);
  v1::PlanResponse out;
  const grpc::Status s = s_.planner->Plan(Context().get(), plan, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message().rfind("study.cluster.gpus_per_node: ", 0), 0u)
      << s.error_message();
}

// One Plan call returns at most kMaxPlanCandidates: top=0 (every feasible
// layout) built 118 MB replies in the review.
TEST_F(ValidationTest, APlanOfEveryLayoutIsRefusedByTheService) {
  for (const int64_t top : {int64_t{0}, kMaxPlanCandidates + 1}) {
    v1::PlanRequest plan;
    *plan.mutable_study() = TinySpec(1, 2);
    plan.mutable_study()->mutable_search()->set_top(top);
    v1::PlanResponse out;
    const grpc::Status s = s_.planner->Plan(Context().get(), plan, &out);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << top;
    EXPECT_EQ(s.error_message().rfind("study.search.top: ", 0), 0u)
        << s.error_message();
  }
  v1::PlanRequest plan;
  *plan.mutable_study() = TinySpec(1, 2);
  plan.mutable_study()->mutable_search()->set_top(kMaxPlanCandidates);
  v1::PlanResponse out;
  EXPECT_TRUE(s_.planner->Plan(Context().get(), plan, &out).ok());
  EXPECT_GT(out.candidates_size(), 0);
}

TEST_F(ValidationTest, AnUnknownStudyIsNotFound) {
  v1::GetStudyRequest get;
  get.set_study_id(42);
  v1::GetStudyResponse study;
  EXPECT_EQ(s_.planner->GetStudy(Context().get(), get, &study).error_code(),
            grpc::StatusCode::NOT_FOUND);
  v1::GetRecommendationRequest rec;
  rec.set_study_id(42);
  v1::Recommendation r;
  EXPECT_EQ(
      s_.planner->GetRecommendation(Context().get(), rec, &r).error_code(),
      grpc::StatusCode::NOT_FOUND);
  v1::CancelStudyRequest cancel;
  cancel.set_study_id(42);
  v1::CancelStudyResponse cancelled;
  EXPECT_EQ(
      s_.planner->CancelStudy(Context().get(), cancel, &cancelled).error_code(),
      grpc::StatusCode::NOT_FOUND);
  v1::ListTrialsRequest list;
  list.set_study_id(42);
  v1::ListTrialsResponse trials;
  EXPECT_EQ(s_.planner->ListTrials(Context().get(), list, &trials).error_code(),
            grpc::StatusCode::NOT_FOUND);
  v1::WatchStudyRequest watch;
  watch.set_study_id(42);
  auto context = Context();
  auto reader = s_.planner->WatchStudy(context.get(), watch);
  v1::StudyEvent event;
  EXPECT_FALSE(reader->Read(&event));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(CountStudies(s_), 0);
}

TEST_F(ValidationTest, AMalformedResultIsRefusedAndNothingWritten) {
  ScriptedAgent agent(s_, "cpu-a");
  ASSERT_TRUE(agent.Register().ok());
  v1::StudySpec spec = TinySpec(1, 2);
  spec.mutable_trials()->set_max_trials(1);
  ASSERT_TRUE(Submit(spec).ok());
  std::optional<v1::TrialAssignment> a = agent.Lease();
  ASSERT_TRUE(a.has_value());
  const grpc::Status not_json = agent.Report(a->trial_id(), "{\"status\": ");
  EXPECT_EQ(not_json.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(not_json.error_message(), "result_json: not valid JSON");
  const grpc::Status bad_status =
      agent.Report(a->trial_id(), R"({"status": "exploded"})");
  EXPECT_EQ(bad_status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(bad_status.error_message().rfind("result_json: trial.status", 0),
            0u)
      << bad_status.error_message();
  const std::vector<v1::Trial> trials = ListTrials(s_, a->study_id());
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0].state(), v1::TRIAL_LEASED);
  EXPECT_FALSE(trials[0].has_measured());
  absl::StatusOr<std::vector<db::TrialMetric>> metrics =
      s_.server->store().GetTrialMetrics(a->trial_id());
  ASSERT_TRUE(metrics.ok());
  EXPECT_TRUE(metrics->empty());
  // The well-formed report is then taken.
  EXPECT_TRUE(agent.Report(a->trial_id(), OkResultJson(*a, 0.01)).ok());
}

TEST_F(ValidationTest, AgentCallsNameWhatIsWrong) {
  ScriptedAgent nobody(s_, "nobody");
  v1::LeaseTrialRequest lease;
  lease.set_agent_id("nobody");
  v1::LeaseTrialResponse out;
  auto stub = v1::AgentService::NewStub(s_.channel);
  EXPECT_EQ(stub->LeaseTrial(Context().get(), lease, &out).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(nobody.Heartbeat({}).error_code(), grpc::StatusCode::NOT_FOUND);
  ScriptedAgent empty(s_, "no-ranks", "cpu", 0);
  const grpc::Status s = empty.Register();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message().rfind("agent.gpu_count: ", 0), 0u)
      << s.error_message();
  ScriptedAgent tpu(s_, "tpu-a", "tpu", 4);
  EXPECT_EQ(tpu.Register().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace tessera::service::testing
