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

#include "core/trial_result.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
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

}  // namespace
}  // namespace tessera::service::testing
