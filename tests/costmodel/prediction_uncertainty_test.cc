// Prediction intervals and ranking ties: hand values for the defaults, the
// coefficient terms against explicit predictions at the moved coefficient,
// the cancellation of a shared coefficient between two layouts, and the
// spreads a calibration file lends.
#include "costmodel/fit/prediction_uncertainty.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "costmodel/fit/calibration_fit.h"
#include "costmodel/prediction.h"

namespace tessera::costmodel {
namespace {

Workload EightH100() {
  return Workload{*ModelPreset("llama3-8b"),
                  MakeCluster(*GpuPreset("h100-sxm"), 1, 8),
                  TrainingConfig{.global_batch = 32, .seq_len = 4096}};
}

LayoutEvaluation Evaluate(const Workload& w, const char* layout,
                          const Calibration& c) {
  absl::StatusOr<Layout> l = ParseLayout(layout);
  EXPECT_TRUE(l.ok()) << l.status();
  LayoutEvaluation e = PredictLayout(w, *l, c);
  EXPECT_TRUE(e.feasible) << layout << ": " << e.reason;
  return e;
}

TEST(PredictionUncertaintyTest, DefaultsByHand) {
  const Workload w = EightH100();
  const Calibration c;
  const PredictionUncertainty u =
      DefaultPredictionUncertainty(Precision::kBf16);
  EXPECT_EQ(DefaultPredictionUncertainty(Precision::kFp8).model_log_sd,
            kDefaultFp8ModelLogSd);
  EXPECT_TRUE(u.coefficients.empty());
  const LayoutEvaluation best = Evaluate(w, "zero=3,micro_batch=1", c);
  const StepTimeInterval i = IntervalOf(w, best, c, u);
  const double t = best.prediction.step_time_s;
  EXPECT_NEAR(i.log_sd, 0.09, 1e-12);
  EXPECT_NEAR(i.low_s, t * std::exp(-0.09), 1e-12);
  EXPECT_NEAR(i.high_s, t * std::exp(0.09), 1e-12);

  // Independent model errors: the difference's sd is 0.09 * sqrt(2) = 0.127;
  // 5% and 12% slower (log 0.049, 0.113: the latter outside one layout's
  // 0.09) are within it, 20% slower (log 0.182) is not.
  LayoutEvaluation close = best, closer_to_edge = best, far = best;
  close.prediction.step_time_s = 1.05 * t;
  closer_to_edge.prediction.step_time_s = 1.12 * t;
  far.prediction.step_time_s = 1.20 * t;
  const RankingUncertainty r =
      AssessRanking(w, {best, close, closer_to_edge, far}, c, u);
  ASSERT_EQ(r.intervals.size(), 4u);
  EXPECT_EQ(r.within_error_of_best,
            (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(r.within_error_count, 3);
  EXPECT_NEAR(r.intervals[3].high_s, 1.20 * t * std::exp(0.09), 1e-9);
}

TEST(PredictionUncertaintyTest, CoefficientTermIsTheCentralDifference) {
  const Workload w = EightH100();
  const Calibration c;
  const PredictionUncertainty u = PredictionUncertainty::Independent(
      {{"gemm_peak_efficiency", 0.2}, {"intra_node_bw_efficiency", 0.2}}, 0);
  const LayoutEvaluation e = Evaluate(w, "tp=2,zero=1,micro_batch=1", c);
  // By hand: each coefficient moved by its sd in its shifted log (both have
  // ranges above 0, so u = log x; 0.8 * e^0.2 stays below their maximum 1),
  // the step time predicted there.
  auto log_t = [&](const char* name, double factor) {
    Calibration moved = c;
    EXPECT_TRUE(moved.Set(name, *c.Get(name) * factor).ok());
    return std::log(PredictLayout(w, e.layout, moved).prediction.step_time_s);
  };
  const double d_gemm = (log_t("gemm_peak_efficiency", std::exp(0.2)) -
                         log_t("gemm_peak_efficiency", std::exp(-0.2))) /
                        2;
  const double d_link = (log_t("intra_node_bw_efficiency", std::exp(0.2)) -
                         log_t("intra_node_bw_efficiency", std::exp(-0.2))) /
                        2;
  EXPECT_LT(d_gemm, -0.05);  // a faster GEMM, a shorter step
  EXPECT_LT(d_link, 0);      // tp's collectives cross NVLink
  const StepTimeInterval i = IntervalOf(w, e, c, u);
  EXPECT_NEAR(i.log_sd, std::hypot(d_gemm, d_link), 1e-9);
  // Correlated: sd^2 = g^T S g with the off-diagonal term, g = d / 0.2.
  PredictionUncertainty correlated = u;
  const double rho = -0.9, s12 = rho * 0.2 * 0.2;
  correlated.covariance[1] = correlated.covariance[2] = s12;
  const double g1 = d_gemm / 0.2, g2 = d_link / 0.2;
  const double variance = g1 * g1 * 0.04 + g2 * g2 * 0.04 + 2 * g1 * g2 * s12;
  EXPECT_NEAR(IntervalOf(w, e, c, correlated).log_sd, std::sqrt(variance),
              1e-9);
  EXPECT_LT(IntervalOf(w, e, c, correlated).log_sd, i.log_sd);
}

TEST(PredictionUncertaintyTest, ASharedCoefficientCancelsBetweenLayouts) {
  const Workload w = EightH100();
  const Calibration c;
  PredictionUncertainty u =
      PredictionUncertainty::Independent({{"gemm_peak_efficiency", 0.5}}, 0);
  const LayoutEvaluation best = Evaluate(w, "zero=3,micro_batch=1", c);
  LayoutEvaluation same = best;
  same.prediction.step_time_s *= 1.01;
  // Each interval is wide, but the GEMM rate moves both layouts alike: the
  // 1% is resolved.
  RankingUncertainty r = AssessRanking(w, {best, same}, c, u);
  EXPECT_GT(r.intervals[1].log_sd, 0.1);
  EXPECT_EQ(r.within_error_of_best, (std::vector<bool>{true, false}));
  // The model's own error is not shared: with it the 1% is a tie.
  u.model_log_sd = 0.05;
  r = AssessRanking(w, {best, same}, c, u);
  EXPECT_EQ(r.within_error_of_best, (std::vector<bool>{true, true}));
  EXPECT_EQ(r.within_error_count, 2);
}

TEST(PredictionUncertaintyTest, ACalibrationFileLendsItsFit) {
  CalibrationFile f;
  f.samples = 6;
  f.fitted = {"gemm_peak_efficiency", "elementwise_traffic_factor"};
  f.posterior_log_sd = {{"gemm_peak_efficiency", 0.2},
                        {"elementwise_traffic_factor", 0.3}};
  f.posterior_covariance = {
      .coefficients = {"gemm_peak_efficiency", "elementwise_traffic_factor"},
      .matrix = {0.04, -0.05, -0.05, 0.09}};
  f.prior_log_sd = 0.3;
  f.step_time.fitted_mape = 0.04;
  const PredictionUncertainty u = PredictionUncertaintyOf(f, Precision::kBf16);
  // Every coefficient but the fixed costs that fits leave at the prior by
  // default (CalibrationFitOptions::fixed: no trial moves them, so a spread
  // on them would send trials where they cannot learn anything).
  const std::vector<std::string> not_learned = CalibrationFitOptions{}.fixed;
  ASSERT_EQ(not_learned.size(), 3u);
  ASSERT_EQ(u.coefficients.size(),
            Calibration::Infos().size() - not_learned.size());
  for (const std::string& name : not_learned) {
    EXPECT_EQ(std::count(u.coefficients.begin(), u.coefficients.end(), name),
              0)
        << name;
  }
  const size_t n = u.coefficients.size();
  // The fitted block first, with its covariance; the others the prior's.
  EXPECT_EQ(u.coefficients[0], "gemm_peak_efficiency");
  EXPECT_EQ(u.coefficients[1], "elementwise_traffic_factor");
  EXPECT_EQ(u.covariance[0 * n + 1], -0.05);
  EXPECT_EQ(u.covariance[1 * n + 1], 0.09);
  EXPECT_NEAR(u.covariance[5 * n + 5], 0.09, 1e-15);
  EXPECT_EQ(u.covariance[5 * n + 4], 0);
  EXPECT_NEAR(u.model_log_sd, 0.04 * std::sqrt(M_PI / 2), 1e-12);
  // A fit that freed one of them (usp_sweep_bench does) lends its spread.
  CalibrationFile freed = f;
  freed.fitted.push_back("host_dispatch_s_per_layer");
  freed.posterior_log_sd["host_dispatch_s_per_layer"] = 0.1;
  const PredictionUncertainty v =
      PredictionUncertaintyOf(freed, Precision::kBf16);
  EXPECT_EQ(std::count(v.coefficients.begin(), v.coefficients.end(),
                       "host_dispatch_s_per_layer"),
            1);
  f.step_time.fitted_mape = 0.001;
  EXPECT_EQ(PredictionUncertaintyOf(f, Precision::kBf16).model_log_sd,
            kMinModelLogSd);
  // No fit (collectives only): the defaults.
  f.samples = 0;
  EXPECT_EQ(PredictionUncertaintyOf(f, Precision::kBf16).model_log_sd,
            kDefaultModelLogSd);
  EXPECT_EQ(PredictionUncertaintyOf(f, Precision::kFp8).model_log_sd,
            kDefaultFp8ModelLogSd);
  EXPECT_TRUE(
      PredictionUncertaintyOf(f, Precision::kBf16).coefficients.empty());

  // The prior's spread survives the file.
  f.samples = 6;
  absl::StatusOr<CalibrationFile> back =
      ParseCalibrationFile(CalibrationFileJson(f), "cal.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->prior_log_sd, 0.3);
  EXPECT_EQ(back->posterior_covariance.coefficients,
            f.posterior_covariance.coefficients);
  EXPECT_EQ(back->posterior_covariance.matrix, f.posterior_covariance.matrix);
  // An asymmetric matrix is refused, naming the field.
  CalibrationFile bad = f;
  bad.posterior_covariance.matrix = {0.04, -0.05, 0.05, 0.09};
  EXPECT_EQ(ParseCalibrationFile(CalibrationFileJson(bad), "cal.json")
                .status()
                .message(),
            "cal.json: fit.posterior_covariance.matrix: must be symmetric "
            "(rows 0 and 1 differ)");
  EXPECT_EQ(ParseCalibrationFile(
                R"({"format": "tessera-calibration/1", "stack": "tessera",
                    "gpu": "h100-sxm", "architecture": "hopper",
                    "coefficients": {}, "fit": {"prior_log_sd": -1}})",
                "bad.json")
                .status()
                .message(),
            "bad.json: fit.prior_log_sd: must be a number >= 0");
}

TEST(PredictionUncertaintyTest, AFitRecordsItsPriorSpread) {
  const Workload w = EightH100();
  CalibrationSample s;
  s.workload = w;
  s.layout = *ParseLayout("zero=1,micro_batch=1");
  s.step_time_s =
      1.1 * PredictLayout(w, s.layout, Calibration{}).prediction.step_time_s;
  CalibrationFitOptions options;
  options.prior_log_sd = 0.3;
  absl::StatusOr<CalibrationFit> fit =
      FitCalibration({s}, Calibration{}, options);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_EQ(fit->prior_log_sd, 0.3);
  // The covariance's diagonal is the posterior variances.
  const PosteriorCovariance& cov = fit->posterior_covariance;
  ASSERT_EQ(cov.coefficients, fit->fitted);
  for (size_t i = 0; i < cov.size(); ++i) {
    EXPECT_NEAR(std::sqrt(cov.At(i, i)),
                fit->posterior_log_sd.at(cov.coefficients[i]), 1e-12);
    for (size_t j = 0; j < i; ++j) EXPECT_EQ(cov.At(i, j), cov.At(j, i));
  }
}

}  // namespace
}  // namespace tessera::costmodel
