// Which trials the cost model believes, over real gRPC with one scripted
// agent: a trial 6x slower than the rest is left out of the fit as an
// outlier and named; the GPU's calibration (what every later study starts
// from) changes only from several consistent trials; every calibration
// keeps its trials, so that an operator's invalidation of one fits each
// calibration it was in again without it, down to the prior when too few
// are left.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "service/calibration_exchange.h"
#include "service/recalibration.h"
#include "service/trial_geometry.h"
#include "service/trial_invalidation.h"
#include "proto/convert.h"
#include "tests/service/planner/test_harness.h"

namespace tessera::service::testing {
namespace {

TEST(GpuCalibrationRuleTest, NeedsSeveralConsistentTrials) {
  costmodel::CalibrationFit fit;
  fit.samples = kMinGpuCalibrationTrials;
  fit.fitted_step_time_mape = kMaxGpuCalibrationMape;
  EXPECT_TRUE(MayCalibrateGpu(fit));
  fit.samples = kMinGpuCalibrationTrials - 1;
  EXPECT_FALSE(MayCalibrateGpu(fit));
  fit.samples = 10;
  fit.fitted_step_time_mape = 1.01 * kMaxGpuCalibrationMape;
  EXPECT_FALSE(MayCalibrateGpu(fit));
}

class CalibrationTrustTest : public ::testing::Test {
 protected:
  void SetUp() override {
    s_ = StartServer(TestOptions(dir_.File("t.db"), clock_));
    agent_ = std::make_unique<ScriptedAgent>(s_, "cpu-a");
    ASSERT_TRUE(agent_->Register().ok());
    v1::StudySpec spec = TinySpec(1, 2);
    spec.mutable_trials()->set_max_trials(6);
    spec.mutable_trials()->set_first_rung(5);
    spec.mutable_trials()->set_stop_margin(10);
    spec.mutable_search()->set_top(24);
    // What the defaults predict for each layout (the trials are made slower
    // than that, not than the refitted predictions they are queued with).
    v1::PlanRequest plan;
    *plan.mutable_study() = spec;
    plan.mutable_study()->mutable_search()->set_top(1000);
    v1::PlanResponse planned;
    ASSERT_TRUE(s_.planner->Plan(Context().get(), plan, &planned).ok());
    for (const v1::LayoutEvaluation& e : planned.candidates()) {
      default_step_s_[LayoutKey(*LayoutFromProto(e.layout()))] =
          e.prediction().step_time_s();
    }
    v1::SubmitStudyRequest r;
    *r.mutable_spec() = spec;
    v1::SubmitStudyResponse out;
    ASSERT_TRUE(s_.planner->SubmitStudy(Context().get(), r, &out).ok());
    study_ = out.study_id();
  }

  // Runs the five trials of rung 0: each 1.3x the defaults' prediction, but
  // the third 6x (a throttled GPU); returns their ids in order.
  std::vector<int64_t> RunRungZero() {
    std::vector<int64_t> ids;
    for (int i = 0; i < 5; ++i) {
      std::optional<v1::TrialAssignment> a = agent_->Lease();
      EXPECT_TRUE(a.has_value()) << "lease " << i;
      if (!a.has_value()) return ids;
      const double predicted =
          default_step_s_[LayoutKey(*LayoutFromProto(a->layout()))];
      EXPECT_GT(predicted, 0);
      const double slower = i == 2 ? 6.0 : 1.3;
      // Times only: the harness's placeholder memory figure would be fitted
      // too (the cpu backend measures its memory).
      nlohmann::json result =
          nlohmann::json::parse(OkResultJson(*a, predicted * slower));
      result.erase("peak_memory_bytes");
      EXPECT_TRUE(agent_->Report(a->trial_id(), result.dump()).ok());
      ids.push_back(a->trial_id());
    }
    return ids;
  }

  db::Calibration Latest(const std::string& scope) {
    absl::StatusOr<db::Calibration> c =
        s_.server->store().LatestCalibration(scope);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *c : db::Calibration{};
  }

  TempDir dir_;
  ManualClock clock_;
  TestServer s_;
  std::unique_ptr<ScriptedAgent> agent_;
  int64_t study_ = 0;
  std::map<std::string, double> default_step_s_;  // by LayoutKey
};

TEST_F(CalibrationTrustTest, ASlowTrialIsLeftOutAndTheRestCalibrateTheGpu) {
  const std::vector<int64_t> ids = RunRungZero();
  ASSERT_EQ(ids.size(), 5u);
  const db::Calibration gpu = Latest(db::GpuScope("h100-sxm"));
  EXPECT_EQ(gpu.samples, 4);
  EXPECT_EQ(gpu.excluded_trial_ids, std::vector<int64_t>{ids[2]});
  EXPECT_EQ(gpu.trial_ids,
            (std::vector<int64_t>{ids[0], ids[1], ids[3], ids[4]}));
  // The fit of the other four explains them (each 1.3x the defaults).
  EXPECT_LT(gpu.fit_error, 0.05);
}

TEST_F(CalibrationTrustTest, InvalidatingATrialFitsEveryCalibrationWithoutIt) {
  const std::vector<int64_t> ids = RunRungZero();
  ASSERT_EQ(ids.size(), 5u);
  db::TrialStore& store = s_.server->store();
  const db::Calibration before = Latest(db::GpuScope("h100-sxm"));

  absl::StatusOr<Invalidation> done =
      InvalidateTrialAndRecalibrate(store, ids[0], "shared its cores");
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ(done->recalibrated.size(), 2u);  // the GPU's and the study's
  EXPECT_TRUE(absl::StartsWith(done->recalibrated[0],
                               "gpu:h100-sxm: fitted "
                               "again on 3 trials"))
      << done->recalibrated[0];
  const db::Trial t = *store.GetTrial(ids[0]);
  EXPECT_EQ(t.status, db::TrialState::kInvalid);
  EXPECT_EQ(t.reason, "invalidated: shared its cores");
  for (const std::string& scope :
       {db::GpuScope("h100-sxm"), db::StudyScope(study_)}) {
    const db::Calibration c = Latest(scope);
    EXPECT_GT(c.id, before.id) << scope;
    EXPECT_EQ(c.trial_ids, (std::vector<int64_t>{ids[1], ids[3], ids[4]}))
        << scope;
    EXPECT_EQ(c.excluded_trial_ids, std::vector<int64_t>{ids[2]}) << scope;
    EXPECT_EQ(c.samples, 3) << scope;
  }

  // One more: the two consistent trials left are too few for the GPU, which
  // goes back to its prior (and is planned as if nothing were measured); the
  // study's own calibration is fitted again on the three it still names.
  done = InvalidateTrialAndRecalibrate(store, ids[1], "wrong driver");
  ASSERT_TRUE(done.ok()) << done.status();
  const db::Calibration gpu = Latest(db::GpuScope("h100-sxm"));
  EXPECT_EQ(gpu.samples, 0);
  EXPECT_TRUE(gpu.trial_ids.empty());
  absl::StatusOr<GpuCalibrationSources> sources =
      LatestGpuCalibrationSources(store, "h100-sxm");
  ASSERT_TRUE(sources.ok()) << sources.status();
  EXPECT_FALSE(sources->trial_fit.has_value());
  const db::Calibration mine = Latest(db::StudyScope(study_));
  std::vector<int64_t> named = mine.trial_ids;
  named.insert(named.end(), mine.excluded_trial_ids.begin(),
               mine.excluded_trial_ids.end());
  std::sort(named.begin(), named.end());
  EXPECT_EQ(named, (std::vector<int64_t>{ids[2], ids[3], ids[4]}));

  // Bad input changes nothing.
  const int64_t newest = Latest(db::GpuScope("h100-sxm")).id;
  EXPECT_EQ(InvalidateTrialAndRecalibrate(store, 9999, "x").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(InvalidateTrialAndRecalibrate(store, ids[3], "").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.GetTrial(ids[3])->status, db::TrialState::kOk);
  EXPECT_EQ(Latest(db::GpuScope("h100-sxm")).id, newest);
}

}  // namespace
}  // namespace tessera::service::testing
