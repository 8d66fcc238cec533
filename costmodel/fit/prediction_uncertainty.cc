#include "costmodel/fit/prediction_uncertainty.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "costmodel/fit/calibration_fit.h"

namespace tessera::costmodel {
namespace {

// A normal's sd from its mean absolute value.
constexpr double kSdPerMape = 1.2533141373155003;  // sqrt(pi / 2)

const CoefficientInfo* InfoOf(const std::string& name) {
  for (const CoefficientInfo& info : Calibration::Infos()) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

// log(step time) at `calibration` with the coefficient `info` moved to u,
// or NaN when the layout has no step time there.
double LogStepTimeAt(const Workload& w, const Layout& layout,
                     Calibration calibration, const CoefficientInfo& info,
                     double u) {
  const double offset = ShiftedLogOffset(info);
  const double value =
      std::clamp(std::exp(u) - offset, info.min_value, info.max_value);
  if (!calibration.Set(info.name, value).ok()) return std::nan("");
  const double t = PredictLayout(w, layout, calibration).prediction.step_time_s;
  return t > 0 && std::isfinite(t) ? std::log(t) : std::nan("");
}

// Per coefficient of `u` (in its order): d log t / d u_j, a central
// difference over one sd each side, within the coefficient's range.
std::vector<double> Gradient(const Workload& w,
                             const LayoutEvaluation& evaluation,
                             const Calibration& calibration,
                             const PredictionUncertainty& uncertainty) {
  const double base = std::log(evaluation.prediction.step_time_s);
  const size_t n = uncertainty.coefficients.size();
  std::vector<double> out(n, 0);
  for (size_t j = 0; j < n; ++j) {
    const CoefficientInfo* info = InfoOf(uncertainty.coefficients[j]);
    const double variance = uncertainty.covariance[j * n + j];
    if (info == nullptr || !(variance > 0)) continue;
    const double sd = std::sqrt(variance);
    const double offset = ShiftedLogOffset(*info);
    const double lo = std::log(info->min_value + offset);
    const double hi = std::log(info->max_value + offset);
    const double u = std::log(*calibration.Get(info->name) + offset);
    double u_up = std::min(u + sd, hi), u_down = std::max(u - sd, lo);
    double y_up = LogStepTimeAt(w, evaluation.layout, calibration, *info, u_up);
    double y_down =
        LogStepTimeAt(w, evaluation.layout, calibration, *info, u_down);
    // A side where the layout has no step time is taken at the base.
    if (std::isnan(y_up)) y_up = base, u_up = u;
    if (std::isnan(y_down)) y_down = base, u_down = u;
    if (u_up > u_down) out[j] = (y_up - y_down) / (u_up - u_down);
  }
  return out;
}

// g^T S g.
double QuadraticForm(const std::vector<double>& g,
                     const std::vector<double>& s) {
  const size_t n = g.size();
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) sum += g[i] * s[i * n + j] * g[j];
  }
  return std::max(sum, 0.0);
}

StepTimeInterval Interval(double step_time_s, double log_sd) {
  return StepTimeInterval{.low_s = step_time_s * std::exp(-log_sd),
                          .high_s = step_time_s * std::exp(log_sd),
                          .log_sd = log_sd};
}

}  // namespace

PredictionUncertainty PredictionUncertainty::Independent(
    const std::map<std::string, double>& log_sd, double model_log_sd) {
  PredictionUncertainty u;
  const size_t n = log_sd.size();
  u.covariance.assign(n * n, 0);
  size_t i = 0;
  for (const auto& [name, sd] : log_sd) {
    u.coefficients.push_back(name);
    u.covariance[i * n + i] = sd * sd;
    ++i;
  }
  u.model_log_sd = model_log_sd;
  return u;
}

PredictionUncertainty DefaultPredictionUncertainty(Precision precision) {
  PredictionUncertainty u;
  if (precision == Precision::kFp8) {
    u.model_log_sd = kDefaultFp8ModelLogSd;
    u.source = "the stack defaults' error on 46 published fp8 runs (MAPE 8.6%)";
  } else {
    u.model_log_sd = kDefaultModelLogSd;
    u.source =
        "the stack defaults' error on 251 published bf16 runs (MAPE 7.1%)";
  }
  return u;
}

double ModelLogSdOfMape(double step_time_mape) {
  return std::max(kMinModelLogSd, step_time_mape * kSdPerMape);
}

PredictionUncertainty PredictionUncertaintyOf(const CalibrationFile& file,
                                              Precision precision) {
  if (file.samples == 0) return DefaultPredictionUncertainty(precision);
  // What no study's fit moves (calibration_fit.h): no spread from the prior.
  const std::vector<std::string> not_learned = CalibrationFitOptions{}.fixed;
  // The fitted block: the posterior covariance, or its diagonal when the
  // file has none.
  const PosteriorCovariance& posterior = file.posterior_covariance;
  std::vector<std::string> names = posterior.coefficients;
  std::vector<double> variances;
  for (const CoefficientInfo& info : Calibration::Infos()) {
    const bool fitted = std::find(file.fitted.begin(), file.fitted.end(),
                                  info.name) != file.fitted.end();
    if (std::find(names.begin(), names.end(), info.name) != names.end()) {
      continue;
    }
    auto sd = file.posterior_log_sd.find(info.name);
    if (fitted && sd != file.posterior_log_sd.end()) {
      names.push_back(info.name);
      variances.push_back(sd->second * sd->second);
    } else if (!fitted && file.prior_log_sd > 0 &&
               std::find(not_learned.begin(), not_learned.end(), info.name) ==
                   not_learned.end()) {
      names.push_back(info.name);
      variances.push_back(file.prior_log_sd * file.prior_log_sd);
    }
  }
  PredictionUncertainty u;
  const size_t n = names.size(), k = posterior.size();
  u.coefficients = names;
  u.covariance.assign(n * n, 0);
  for (size_t i = 0; i < k; ++i) {
    for (size_t j = 0; j < k; ++j) u.covariance[i * n + j] = posterior.At(i, j);
  }
  for (size_t i = k; i < n; ++i) u.covariance[i * n + i] = variances[i - k];
  u.model_log_sd =
      ModelLogSdOfMape(file.step_time.fitted_mape);
  u.source = absl::StrFormat(
      "the fit to %d measured runs (step-time MAPE %.1f%%), its coefficients' "
      "covariance and, for those it did not fit (but the fixed costs fits "
      "leave at the prior), the prior's spread (log sd %.2f)",
      file.samples, 100 * file.step_time.fitted_mape, file.prior_log_sd);
  return u;
}

StepTimeInterval IntervalOf(const Workload& workload,
                            const LayoutEvaluation& evaluation,
                            const Calibration& calibration,
                            const PredictionUncertainty& uncertainty) {
  if (!evaluation.feasible || !(evaluation.prediction.step_time_s > 0)) {
    return {};
  }
  const std::vector<double> g =
      Gradient(workload, evaluation, calibration, uncertainty);
  const double variance = uncertainty.model_log_sd * uncertainty.model_log_sd +
                          QuadraticForm(g, uncertainty.covariance);
  return Interval(evaluation.prediction.step_time_s, std::sqrt(variance));
}

RankingUncertainty AssessRanking(
    const Workload& workload, const std::vector<LayoutEvaluation>& candidates,
    const Calibration& calibration, const PredictionUncertainty& uncertainty) {
  RankingUncertainty r;
  if (candidates.empty()) return r;
  const size_t n = uncertainty.coefficients.size();
  std::vector<std::vector<double>> gradients;
  for (const LayoutEvaluation& e : candidates) {
    const bool feasible = e.feasible && e.prediction.step_time_s > 0;
    gradients.push_back(feasible
                            ? Gradient(workload, e, calibration, uncertainty)
                            : std::vector<double>(n, 0));
  }
  const double model_var = uncertainty.model_log_sd * uncertainty.model_log_sd;
  const double best = candidates.front().prediction.step_time_s;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const LayoutEvaluation& e = candidates[i];
    const bool feasible = e.feasible && e.prediction.step_time_s > 0;
    std::vector<double> difference(n);
    for (size_t j = 0; j < n; ++j) {
      difference[j] = gradients[i][j] - gradients[0][j];
    }
    const double own =
        model_var + QuadraticForm(gradients[i], uncertainty.covariance);
    const double apart = (i == 0 ? 0 : 2 * model_var) +
                         QuadraticForm(difference, uncertainty.covariance);
    r.intervals.push_back(
        feasible ? Interval(e.prediction.step_time_s, std::sqrt(own))
                 : StepTimeInterval{});
    const bool within =
        feasible && best > 0 &&
        std::log(e.prediction.step_time_s / best) <= std::sqrt(apart);
    r.within_error_of_best.push_back(within);
    if (within) ++r.within_error_count;
  }
  return r;
}

}  // namespace tessera::costmodel
