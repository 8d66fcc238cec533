// Calibration files in and out of the planner's store: what an import
// holds, when a newer fit of trials refines it, what an export writes, and
// that a bad import stores nothing.
#include "service/calibration_exchange.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/gpu.h"
#include "core/model.h"
#include "core/workload.h"
#include "db/sqlite_trial_store.h"
#include "gtest/gtest.h"
#include "costmodel/calibration/measured_collectives.h"
#include "costmodel/fit/fit_file.h"
#include "service/recalibration.h"
#include "costmodel/stacks/stack_calibration.h"
#include "tests/service/planner/test_harness.h"

namespace tessera::service::testing {
namespace {

Workload TorchtitanOnH100() {
  return Workload{
      *ModelPreset("llama3-8b"), MakeCluster(*GpuPreset("h100-sxm"), 8, 8),
      TrainingConfig{
          .global_batch = 64, .seq_len = 4096, .stack = "torchtitan"}};
}

// A torchtitan calibration for H100 with GEMMs at `gemm_efficiency` and a
// slow fabric (AllGather at 300 GB/s on one node, 10 GB/s on eight).
std::string FileJson(double gemm_efficiency) {
  const Workload w = TorchtitanOnH100();
  const costmodel::Calibration prior = *costmodel::DefaultCalibration(w);
  costmodel::CalibrationFile f = costmodel::MakeCalibrationFile(
      "torchtitan", {}, w.cluster.gpu, prior, nullptr);
  f.calibration.gemm_peak_efficiency = gemm_efficiency;
  f.calibration.collectives = std::make_shared<costmodel::MeasuredCollectives>(
      std::vector<costmodel::CollectiveMeasurement>{
          {costmodel::CollectiveOp::kAllGather, 1, 8, 1e8, 300},
          {costmodel::CollectiveOp::kAllGather, 8, 8, 1e8, 10}});
  return costmodel::CalibrationFileJson(f);
}

v1::ImportCalibrationRequest Request(const std::string& text) {
  v1::ImportCalibrationRequest r;
  r.set_calibration_json(text);
  r.set_source("cal.json");
  return r;
}

class CalibrationExchangeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db::SqliteTrialStoreOptions options;
    options.clock = clock_.AsClock();
    absl::StatusOr<std::unique_ptr<db::SqliteTrialStore>> s =
        db::SqliteTrialStore::Open(dir_.File("t.db"), options);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = *std::move(s);
  }

  GpuCalibrationSources Sources() {
    absl::StatusOr<GpuCalibrationSources> s =
        LatestGpuCalibrationSources(*store_, "h100-sxm");
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : GpuCalibrationSources{};
  }

  TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<db::SqliteTrialStore> store_;
};

TEST_F(CalibrationExchangeTest, AnImportIsRefinedByANewerFitUntilTheNext) {
  v1::ExportCalibrationRequest h100;
  h100.set_gpu("h100-sxm");
  EXPECT_EQ(ExportCalibration(*store_, h100).status().code(),
            absl::StatusCode::kNotFound);

  absl::StatusOr<v1::ImportCalibrationResponse> r =
      ImportCalibration(*store_, Request(FileJson(0.5)));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->gpu(), "h100-sxm");
  EXPECT_EQ(r->stack(), "torchtitan");
  EXPECT_EQ(r->collectives(), 2);
  GpuCalibrationSources s = Sources();
  ASSERT_TRUE(s.imported.has_value());
  EXPECT_FALSE(s.trial_fit.has_value());
  // A study of the file's stack plans with the file; the export is the file.
  const Workload w = TorchtitanOnH100();
  costmodel::Calibration c = StudyCalibration(w, std::nullopt, &*s.imported);
  EXPECT_EQ(c.gemm_peak_efficiency, 0.5);
  ASSERT_NE(c.collectives, nullptr);
  EXPECT_EQ(c.collectives->measurements().size(), 2u);
  EXPECT_EQ(ExportCalibration(*store_, h100)->calibration_json(),
            FileJson(0.5));
  // Trials fit from the import's hardware.
  EXPECT_EQ(TrialStackPrior(w.cluster.gpu, &*s.imported).gemm_peak_efficiency,
            0.5);

  // A fit of trials made after the import refines it: its hardware
  // coefficients, the import's collectives.
  clock_.Advance(absl::Minutes(5));
  db::Calibration fit;
  fit.scope = db::GpuScope("h100-sxm");
  fit.coefficients = {{"gemm_peak_efficiency", 0.6}};
  fit.samples = 4;
  fit.fit_error = 0.03;
  ASSERT_TRUE(store_->SaveCalibration(fit).ok());
  s = Sources();
  ASSERT_TRUE(s.trial_fit.has_value());
  c = StudyCalibration(w, CalibrationFromStored(*s.trial_fit), &*s.imported);
  EXPECT_EQ(c.gemm_peak_efficiency, 0.6);
  ASSERT_NE(c.collectives, nullptr);
  EXPECT_EQ(c.collectives->measurements().size(), 2u);
  // A study of the trials' own stack plans with the fit whole, and the
  // import's collectives still.
  Workload own = w;
  own.training.stack = kTrialStack;
  c = StudyCalibration(own, CalibrationFromStored(*s.trial_fit), &*s.imported);
  EXPECT_EQ(c.gemm_peak_efficiency, 0.6);
  ASSERT_NE(c.collectives, nullptr);
  EXPECT_EQ(c.collectives->measurements().size(), 2u);
  absl::StatusOr<v1::ExportCalibrationResponse> e =
      ExportCalibration(*store_, h100);
  ASSERT_TRUE(e.ok()) << e.status();
  absl::StatusOr<costmodel::CalibrationFile> exported =
      costmodel::ParseCalibrationFile(e->calibration_json(), "export");
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_EQ(exported->stack, kTrialStack);
  EXPECT_EQ(exported->calibration.gemm_peak_efficiency, 0.6);
  EXPECT_EQ(exported->prior.gemm_peak_efficiency, 0.5);
  EXPECT_EQ(exported->fitted, std::vector<std::string>{"gemm_peak_efficiency"});
  EXPECT_EQ(exported->samples, 4);
  EXPECT_EQ(exported->step_time.fitted_mape, 0.03);
  ASSERT_NE(exported->calibration.collectives, nullptr);
  EXPECT_EQ(exported->calibration.collectives->measurements().size(), 2u);
  EXPECT_NE(e->origin().find("over import"), std::string::npos) << e->origin();

  // A newer import sets the older fit aside.
  clock_.Advance(absl::Minutes(5));
  ASSERT_TRUE(ImportCalibration(*store_, Request(FileJson(0.4))).ok());
  s = Sources();
  EXPECT_FALSE(s.trial_fit.has_value());
  EXPECT_EQ(s.imported->calibration.gemm_peak_efficiency, 0.4);
  EXPECT_EQ(ExportCalibration(*store_, h100)->calibration_json(),
            FileJson(0.4));
}

// The spreads the planner sends with a plan follow what it plans with.
TEST_F(CalibrationExchangeTest, PredictionSpreadsFollowTheCalibrationInUse) {
  const Workload torchtitan = TorchtitanOnH100();
  Workload megatron = torchtitan;
  megatron.training.stack = "megatron-core";
  Workload own = torchtitan;
  own.training.stack = kTrialStack;
  // Nothing held: the published runs' error.
  GpuCalibrationSources s = Sources();
  EXPECT_EQ(GpuPredictionUncertainty(torchtitan, s).model_log_sd,
            costmodel::kDefaultModelLogSd);

  // An import with a fit of 6 runs (4% step-time MAPE): its spreads for its
  // own stack, the defaults for another.
  absl::StatusOr<costmodel::CalibrationFile> f =
      costmodel::ParseCalibrationFile(FileJson(0.5), "f");
  ASSERT_TRUE(f.ok()) << f.status();
  f->samples = 6;
  f->step_time = {.samples = 6, .prior_mape = 0.1, .fitted_mape = 0.04};
  f->fitted = {"gemm_peak_efficiency"};
  f->posterior_log_sd = {{"gemm_peak_efficiency", 0.05}};
  f->prior_log_sd = 0.3;
  ASSERT_TRUE(
      ImportCalibration(*store_, Request(costmodel::CalibrationFileJson(*f)))
          .ok());
  s = Sources();
  costmodel::PredictionUncertainty u = GpuPredictionUncertainty(torchtitan, s);
  EXPECT_NEAR(u.model_log_sd, 0.04 * std::sqrt(M_PI / 2), 1e-12);
  EXPECT_FALSE(u.coefficients.empty());
  EXPECT_EQ(GpuPredictionUncertainty(megatron, s).model_log_sd,
            costmodel::kDefaultModelLogSd);

  // A newer fit of trials: its error for the trials' own stack.
  clock_.Advance(absl::Minutes(1));
  db::Calibration fit;
  fit.scope = db::GpuScope("h100-sxm");
  fit.coefficients = {{"gemm_peak_efficiency", 0.6}};
  fit.samples = 3;
  fit.fit_error = 0.1;
  ASSERT_TRUE(store_->SaveCalibration(fit).ok());
  s = Sources();
  u = GpuPredictionUncertainty(own, s);
  EXPECT_NEAR(u.model_log_sd, 0.1 * std::sqrt(M_PI / 2), 1e-12);
  EXPECT_NE(u.source.find("the fit of 3 trials on h100-sxm"), std::string::npos)
      << u.source;
  EXPECT_EQ(GpuPredictionUncertainty(torchtitan, s).model_log_sd,
            costmodel::kDefaultModelLogSd);
}

TEST_F(CalibrationExchangeTest, ABadImportNamesTheFieldAndStoresNothing) {
  std::string out_of_range = FileJson(0.5);
  const std::string value = "\"value\": 0.5";
  ASSERT_NE(out_of_range.find(value), std::string::npos);
  out_of_range.replace(out_of_range.find(value), value.size(), "\"value\": 7");
  std::string unknown_gpu = FileJson(0.5);
  unknown_gpu.replace(unknown_gpu.find("\"h100-sxm\""), 10, "\"h900-sxm\"");
  const struct {
    std::string text;
    const char* message;
  } cases[] = {
      {"{\"format\": ", "cal.json: not a JSON object"},
      {out_of_range, "cal.json: coefficients.gemm_peak_efficiency.value"},
      {unknown_gpu, "cal.json: gpu: "},
      {"{\"format\": \"tessera-calibration/9\"}", "cal.json: format"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.message);
    absl::StatusOr<v1::ImportCalibrationResponse> r =
        ImportCalibration(*store_, Request(c.text));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.message), std::string::npos)
        << r.status();
  }
  EXPECT_EQ(store_->LatestImportedCalibration("h100-sxm").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->LatestImportedCalibration("h900-sxm").status().code(),
            absl::StatusCode::kNotFound);
  v1::ExportCalibrationRequest unknown;
  unknown.set_gpu("h900-sxm");
  EXPECT_EQ(ExportCalibration(*store_, unknown).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::service::testing
