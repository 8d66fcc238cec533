// Reports that must not be believed, over real gRPC (the review's attacks on
// the planner): a fabricated 1e308 tokens/s over a 1e-300 s step, negative
// numbers, a report of 100k metric rows for a 2-step trial. Each is refused
// with INVALID_ARGUMENT, stored as an invalid trial naming why (so that the
// layout is not re-run on it), never becomes the study's best, and leaves
// the planner's predictions as they were. Before measurement_check, the
// first became the study's best and the calibration of every study on the
// GPU (an unrelated plan then predicted 92.7% MFU).
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/model_flops.h"
#include "core/trial_result.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "proto/convert.h"
#include "tests/service/planner/test_harness.h"

namespace tessera::service::testing {
namespace {

class ReportAbuseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    s_ = StartServer(TestOptions(dir_.File("t.db"), clock_));
    agent_ = std::make_unique<ScriptedAgent>(s_, "cpu-a");
    ASSERT_TRUE(agent_->Register().ok());
    v1::SubmitStudyRequest r;
    *r.mutable_spec() = TinySpec(1, 2);
    r.mutable_spec()->mutable_trials()->set_max_trials(2);
    r.mutable_spec()->mutable_trials()->set_first_rung(2);
    v1::SubmitStudyResponse out;
    ASSERT_TRUE(s_.planner->SubmitStudy(Context().get(), r, &out).ok());
    study_ = out.study_id();
  }

  v1::Trial TrialById(int64_t id) {
    for (const v1::Trial& t : ListTrials(s_, study_)) {
      if (t.id() == id) return t;
    }
    ADD_FAILURE() << "no trial " << id;
    return {};
  }

  // The top candidate's predicted step time for a fresh plan of the spec.
  double PredictedBestStepS() {
    v1::PlanRequest r;
    *r.mutable_study() = TinySpec(1, 2);
    v1::PlanResponse out;
    const grpc::Status st = s_.planner->Plan(Context().get(), r, &out);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return out.candidates_size() > 0
               ? out.candidates(0).prediction().step_time_s()
               : 0;
  }

  // The trial's honest result with `edit` applied.
  static std::string Edited(const v1::TrialAssignment& a,
                            const std::function<void(TrialResult&)>& edit) {
    TrialResult r =
        *TrialResultFromJson(nlohmann::json::parse(OkResultJson(a, 0.3)));
    edit(r);
    return TrialResultToJson(r).dump();
  }

  TempDir dir_;
  ManualClock clock_;
  TestServer s_;
  std::unique_ptr<ScriptedAgent> agent_;
  int64_t study_ = 0;
};

TEST_F(ReportAbuseTest, AFabricatedBestIsStoredInvalidAndChangesNothing) {
  const double before = PredictedBestStepS();
  std::optional<v1::TrialAssignment> a = agent_->Lease();
  ASSERT_TRUE(a.has_value());
  const grpc::Status refused =
      agent_->Report(a->trial_id(), Edited(*a, [](TrialResult& r) {
                       r.tokens_per_s = 1e308;
                       r.step_time_s = {1e-300, 1e-300, 1e-300};
                     }));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(refused.error_message().find("implausible report"),
            std::string::npos)
      << refused.error_message();
  const v1::Trial stored = TrialById(a->trial_id());
  EXPECT_EQ(stored.state(), v1::TRIAL_INVALID);
  EXPECT_NE(stored.reason().find("tokens_per_s"), std::string::npos)
      << stored.reason();
  EXPECT_EQ(GetStudy(s_, study_).study().best_tokens_per_s(), 0);
  EXPECT_DOUBLE_EQ(PredictedBestStepS(), before);
  // A retry of the same report changes nothing either.
  EXPECT_NE(agent_->Report(a->trial_id(), OkResultJson(*a, 0.3)).error_code(),
            grpc::StatusCode::OK);
  EXPECT_EQ(TrialById(a->trial_id()).state(), v1::TRIAL_INVALID);

  // An honest report of the next trial is believed and becomes the best.
  std::optional<v1::TrialAssignment> b = agent_->Lease();
  ASSERT_TRUE(b.has_value());
  ASSERT_TRUE(agent_->Report(b->trial_id(), OkResultJson(*b, 0.3)).ok());
  EXPECT_EQ(TrialById(b->trial_id()).state(), v1::TRIAL_OK);
  EXPECT_GT(GetStudy(s_, study_).study().best_tokens_per_s(), 0);
}

// Consistent in itself (tokens/s agrees with the step time) but beyond
// what the study's GPUs can do for the model's FLOPs: the check needs the
// study's workload, and reads it without waiting for a refit.
TEST_F(ReportAbuseTest, FasterThanThePeakOfTheStudysGpusIsRefused) {
  std::optional<v1::TrialAssignment> a = agent_->Lease();
  ASSERT_TRUE(a.has_value());
  const grpc::Status refused = agent_->Report(
      a->trial_id(), Edited(*a, [](TrialResult& r) {
        const double step_s = 1e-9;
        r.step_time_s = {step_s, step_s, step_s};
        r.step_times_s.assign(r.step_times_s.size(), step_s);
        r.tokens_per_s = static_cast<double>(r.global_batch) *
                         static_cast<double>(r.seq_len) / step_s;
        r.tokens_per_s_per_gpu = r.tokens_per_s / static_cast<double>(r.ranks);
      }));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(refused.error_message().find("of model FLOPs per GPU, above"),
            std::string::npos)
      << refused.error_message();
  EXPECT_EQ(TrialById(a->trial_id()).state(), v1::TRIAL_INVALID);
}

TEST_F(ReportAbuseTest, NegativeNumbersAreNotStoredAsOk) {
  std::optional<v1::TrialAssignment> a = agent_->Lease();
  ASSERT_TRUE(a.has_value());
  const grpc::Status refused = agent_->Report(
      a->trial_id(), Edited(*a, [](TrialResult& r) {
        r.tokens_per_s = -r.tokens_per_s;
        r.step_time_s = {-0.3, -0.3, -0.3};
        r.peak_memory_bytes.assign(r.peak_memory_bytes.size(), -1);
      }));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(TrialById(a->trial_id()).state(), v1::TRIAL_INVALID);
}

TEST_F(ReportAbuseTest, AFloodOfMetricRowsIsRefusedAndNoneStored) {
  std::optional<v1::TrialAssignment> a = agent_->Lease();
  ASSERT_TRUE(a.has_value());
  // 100k losses for a trial of a few steps: about 1.6 MB of JSON, over the
  // 1 MiB a report may be.
  const grpc::Status refused =
      agent_->Report(a->trial_id(), Edited(*a, [](TrialResult& r) {
                       r.loss.assign(100'000, 5.123456789012345);
                     }));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(refused.error_message().find("bytes"), std::string::npos)
      << refused.error_message();
  const v1::Trial stored = TrialById(a->trial_id());
  EXPECT_EQ(stored.state(), v1::TRIAL_INVALID);
  EXPECT_EQ(stored.measured().loss_size(), 0);
  // Under the size cap, rows beyond the trial's steps are refused too.
  std::optional<v1::TrialAssignment> b = agent_->Lease();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(
      agent_
          ->Report(b->trial_id(),
                   Edited(*b, [](TrialResult& r) { r.loss.assign(1000, 5.0); }))
          .error_code(),
      grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(TrialById(b->trial_id()).state(), v1::TRIAL_INVALID);
}


// Issue 28, attack 3: a report for a different layout than its lease was
// stored ok under the leased layout and became the recommendation.
TEST_F(ReportAbuseTest, AReportOfAnotherLayoutThanItsLeaseIsRefused) {
  std::optional<v1::TrialAssignment> a = agent_->Lease();
  ASSERT_TRUE(a.has_value());
  const grpc::Status refused =
      agent_->Report(a->trial_id(), Edited(*a, [](TrialResult& r) {
                       r.layout.recompute = r.layout.recompute == Recompute::kFull
                                                ? Recompute::kNone
                                                : Recompute::kFull;
                     }));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(refused.error_message().find("for a trial leased as"),
            std::string::npos)
      << refused.error_message();
  EXPECT_EQ(TrialById(a->trial_id()).state(), v1::TRIAL_INVALID);
  EXPECT_EQ(GetStudy(s_, study_).study().best_tokens_per_s(), 0);
}

// Issue 28, attack 6: numbers far past any run were accepted
// (trial_time_limit_s 1e300 timed every trial out at once; total_tokens
// 1e300). Each is refused naming its field and bound; nothing is stored.
TEST_F(ReportAbuseTest, SpecNumbersPastTheirBoundsAreRefusedNamingTheBound) {
  const int64_t studies = CountStudies(s_);
  const struct {
    std::function<void(v1::StudySpec&)> edit;
    const char* message;
  } kCases[] = {
      {[](v1::StudySpec& s) { s.mutable_trials()->set_trial_time_limit_s(1e300); },
       "study.trials.trial_time_limit_s: at most 604800 (seconds, a week), "
       "got 1e+300"},
      {[](v1::StudySpec& s) { s.mutable_training()->set_total_tokens(1e300); },
       "study.training.total_tokens: at most 1000000000000000 (tokens), got "
       "1e+300"},
      {[](v1::StudySpec& s) { s.mutable_trials()->set_time_budget_s(1e300); },
       "study.trials.time_budget_s: at most 31536000 (seconds, a year)"},
      {[](v1::StudySpec& s) {
         s.mutable_trials()->set_memory_limit_bytes(int64_t{1} << 62);
       },
       "study.trials.memory_limit_bytes: at most"},
      {[](v1::StudySpec& s) {
         s.mutable_training()->set_global_batch(int64_t{1} << 40);
       },
       "study.training.global_batch: at most 16777216 (sequences)"},
      {[](v1::StudySpec& s) { s.mutable_cluster()->set_nodes(int64_t{1} << 40); },
       "study.cluster.nodes: at most 1000000 (nodes)"},
  };
  for (const auto& c : kCases) {
    v1::SubmitStudyRequest r;
    *r.mutable_spec() = TinySpec(1, 2);
    c.edit(*r.mutable_spec());
    v1::SubmitStudyResponse out;
    const grpc::Status st = s_.planner->SubmitStudy(Context().get(), r, &out);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.message;
    EXPECT_NE(st.error_message().find(c.message), std::string::npos)
        << st.error_message();
  }
  EXPECT_EQ(CountStudies(s_), studies);
  // A week is allowed.
  v1::SubmitStudyRequest week;
  *week.mutable_spec() = TinySpec(1, 2);
  week.mutable_spec()->mutable_trials()->set_trial_time_limit_s(604800);
  v1::SubmitStudyResponse out;
  EXPECT_TRUE(s_.planner->SubmitStudy(Context().get(), week, &out).ok());
}

v1::Probe GemmProbe(double host_tflops) {
  v1::Probe p;
  p.set_kind("gemm_f32");
  p.set_group_size(1);
  p.set_value(host_tflops);
  p.set_unit("TFLOP/s");
  return p;
}

v1::Probe MemcpyProbe() {
  v1::Probe p;
  p.set_kind("memcpy");
  p.set_group_size(1);
  p.set_bytes(64 << 20);
  p.set_value(12.5);
  p.set_unit("GB/s");
  return p;
}

// An ok result of `a` whose model FLOPs come to `tflops_per_rank` on each
// of its ranks (tokens/s and the step time follow).
std::string ResultAtTflopsPerRank(const v1::TrialAssignment& a,
                                  double tflops_per_rank) {
  const ModelConfig model = *ModelFromSpec(a.model());
  const double tokens_per_step =
      static_cast<double>(a.global_batch()) * static_cast<double>(a.seq_len());
  const double flops_per_token =
      ModelFlopsPerStep(model, a.global_batch(), a.seq_len()) / tokens_per_step;
  const double tokens_per_s =
      tflops_per_rank * 1e12 * static_cast<double>(a.world_size()) /
      flops_per_token;
  return OkResultJson(a, tokens_per_step / tokens_per_s);
}

// A study planned for the agents' own hardware ("agents" GPU).
int64_t SubmitAgentsStudy(TestServer& s, int64_t nodes) {
  v1::SubmitStudyRequest r;
  *r.mutable_spec() = TinySpec(nodes, 2);
  r.mutable_spec()->mutable_cluster()->mutable_gpu()->set_preset("agents");
  r.mutable_spec()->mutable_trials()->set_max_trials(2);
  r.mutable_spec()->mutable_trials()->set_first_rung(2);
  v1::SubmitStudyResponse out;
  const grpc::Status st = s.planner->SubmitStudy(Context().get(), r, &out);
  EXPECT_TRUE(st.ok()) << st.error_message();
  return out.study_id();
}

// Issue 28, attack 4: ReportProbes with a GEMM rate of 45,000 TFLOP/s
// (x1e300, x1e6, negative) raised the plausibility ceiling, and results
// 1000x too fast were then stored ok. Impossible probes are refused and
// stored nowhere; a possible but uncorroborated one (250x the agent's
// earlier probe) is stored but does not raise the ceiling by itself.
TEST(ProbePoisoningTest, AProbeCannotRaiseTheCeilingByItself) {
  TempDir dir;
  ManualClock clock;
  TestServer s = StartServer(TestOptions(dir.File("t.db"), clock));
  ScriptedAgent agent(s, "cpu-a", "cpu", 2);
  ASSERT_TRUE(agent.Register().ok());
  // Genuine: 0.2 TFLOP/s for the host, 0.1 per rank.
  ASSERT_TRUE(agent.ReportProbes({GemmProbe(0.2), MemcpyProbe()}).ok());
  for (double poison : {45000.0, 0.2e300, 0.2e6, -45000.0, 0.0}) {
    const grpc::Status refused = agent.ReportProbes({GemmProbe(poison)});
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << poison;
    EXPECT_NE(refused.error_message().find("probes[0] gemm_f32"),
              std::string::npos)
        << refused.error_message();
  }
  // Possible for some host, 250x this one's: stored, not believed.
  ASSERT_TRUE(agent.ReportProbes({GemmProbe(50), MemcpyProbe()}).ok());
  db::ProbeFilter gemm;
  gemm.kind = "gemm_f32";
  EXPECT_EQ(s.server->store().ListProbes(gemm)->size(), 2u);

  const int64_t study = SubmitAgentsStudy(s, 1);
  // The study plans for 4 x the genuine rate per rank, not the poison's 25.
  v1::GetRecommendationRequest rr;
  rr.set_study_id(study);
  v1::Recommendation rec;
  ASSERT_TRUE(s.planner->GetRecommendation(Context().get(), rr, &rec).ok());
  EXPECT_DOUBLE_EQ(rec.gpu().peak_dense_tflops(), 0.4);
  std::optional<v1::TrialAssignment> a = agent.Lease();
  ASSERT_TRUE(a.has_value());
  // 10 TFLOP/s per rank: 100x what the host measured before the poison.
  const grpc::Status refused =
      agent.Report(a->trial_id(), ResultAtTflopsPerRank(*a, 10));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(refused.error_message().find("of model FLOPs per GPU, above"),
            std::string::npos)
      << refused.error_message();
  // What the host can do is believed.
  std::optional<v1::TrialAssignment> b = agent.Lease();
  ASSERT_TRUE(b.has_value());
  const grpc::Status taken =
      agent.Report(b->trial_id(), ResultAtTflopsPerRank(*b, 0.05));
  EXPECT_TRUE(taken.ok()) << taken.error_message();
}

// Issue 28, false positive 5: two genuine results were stored invalid,
// "above 1.10 x the GPU's peak", because the ceiling came from the slower
// agent's probe. The ceiling of a gang's trial is its fastest plausible
// agent's.
TEST(ProbePoisoningTest, AGenuineResultOnASlowAgentPassesInAFasterGang) {
  TempDir dir;
  ManualClock clock;
  TestServer s = StartServer(TestOptions(dir.File("t.db"), clock));
  // cpu-a (the study's GPU comes from the first agent) measured its host
  // loaded: 0.02 TFLOP/s per rank; cpu-b 0.1 per rank.
  ScriptedAgent slow(s, "cpu-a", "cpu", 2);
  ScriptedAgent fast(s, "cpu-b", "cpu", 2);
  ASSERT_TRUE(slow.Register().ok());
  ASSERT_TRUE(fast.Register().ok());
  ASSERT_TRUE(slow.ReportProbes({GemmProbe(0.04), MemcpyProbe()}).ok());
  ASSERT_TRUE(fast.ReportProbes({GemmProbe(0.2), MemcpyProbe()}).ok());
  SubmitAgentsStudy(s, 2);
  // The gang forms when both have polled.
  EXPECT_FALSE(slow.Lease().has_value());
  std::optional<v1::TrialAssignment> b = fast.Lease();
  ASSERT_TRUE(b.has_value());
  ASSERT_EQ(b->gang_size(), 2);
  std::optional<v1::TrialAssignment> a = slow.Lease();
  ASSERT_TRUE(a.has_value());
  ASSERT_EQ(a->trial_id(), b->trial_id());
  // 0.06 TFLOP/s per rank: 3x the slow agent's probe, within the fast one's.
  const grpc::Status taken =
      slow.Report(a->trial_id(), ResultAtTflopsPerRank(*a, 0.06));
  EXPECT_TRUE(taken.ok()) << taken.error_message();
  const db::Trial t = *s.server->store().GetTrial(a->trial_id());
  EXPECT_EQ(t.status, db::TrialState::kOk) << t.reason;
}

}  // namespace
}  // namespace tessera::service::testing
