#include "costmodel/fit/calibration_fit.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "core/units.h"
#include "costmodel/memory/memory_model.h"
#include "costmodel/resolved_workload.h"
#include "costmodel/step_model.h"

namespace tessera::costmodel {
namespace {

// Each coefficient's field, in Calibration::Infos() order.
constexpr double Calibration::*kMembers[] = {
#define TESSERA_COEFFICIENT(name, kind, default_value, min, max, unit, source) \
  &Calibration::name,
#include "costmodel/calibration/coefficients.inc"
#undef TESSERA_COEFFICIENT
};
constexpr int kCoefficients = static_cast<int>(std::size(kMembers));

// ln 2: the probe that decides whether a coefficient is identifiable.
const double kLogTwo = std::log(2.0);

// Rounds of "fit, leave out the outliers, fit again" at most.
constexpr int kOutlierRounds = 3;

// A sample that ran but that the fit still predicts above its GPU's memory
// by more than this fraction (past the soft bound's reach, about
// measurement_log_sd / 2) is named in a warning.
constexpr double kOverMemoryWarningFraction = 0.02;

enum class Quantity {
  kStepTime,
  kCompute,
  kComm,
  kExposedComm,
  kWatts,
  kPeakMemory,
  kPeakAllocated,
  // The whole layout's peak (its most loaded stage) against the GPU's
  // memory: a one-sided term, since a sample that ran fitted (see
  // kFitsInMemory in Predicted).
  kFitsInMemory
};

// A sample's prediction: the step's, with the memory of the stage that
// measured it (CalibrationSample::memory_stage) where one is named, and the
// whole layout's peak apart.
struct SamplePrediction {
  Prediction step;
  double layout_peak_bytes = 0;  // the most loaded stage's
  double gpu_memory_bytes = 0;   // what the sample's GPU has
};

double Predicted(const SamplePrediction& s, Quantity q) {
  const Prediction& p = s.step;
  switch (q) {
    case Quantity::kStepTime:
      return p.step_time_s;
    case Quantity::kCompute:
      return p.compute_s;
    case Quantity::kComm:
      return p.comm_s;
    case Quantity::kExposedComm:
      return p.exposed_comm_s;
    case Quantity::kWatts:
      return p.watts_per_gpu;
    case Quantity::kPeakMemory:
      return p.memory.total_bytes;
    case Quantity::kPeakAllocated:
      return p.memory.total_bytes - p.memory.overhead_bytes;
    case Quantity::kFitsInMemory:
      // Compared with the GPU's memory as its "measurement": no residual
      // while the peak is at most that, log(peak / memory) beyond it.
      return std::max(s.layout_peak_bytes, s.gpu_memory_bytes);
  }
  return 0;
}

// One measured quantity of one sample; its residual is
// scale * (log(predicted + floor) - log_measured).
struct Term {
  Quantity quantity = Quantity::kStepTime;
  double floor = 0;
  double log_measured = 0;
  double scale = 0;  // sqrt(sample weight * quantity weight) / sd_m
};

struct PreparedSample {
  ResolvedWorkload resolved;  // the sample's workload, its stack resolved
  Layout layout;              // resolved
  std::vector<Term> terms;
  std::optional<int64_t> memory_stage;  // CalibrationSample::memory_stage
};

// A coefficient's shifted log axis u = log(x + offset) (ShiftedLogOffset).
struct Axis {
  int coefficient = 0;  // index into kMembers and Calibration::Infos()
  double offset = 0;
  double lo = 0, hi = 0;  // the range, in u
  double prior = 0;       // the prior, in u

  // The coefficient's value at u; exactly min or max at the ends.
  double ToValue(double u) const {
    const CoefficientInfo& info = Calibration::Infos()[coefficient];
    if (u <= lo) return info.min_value;
    if (u >= hi) return info.max_value;
    return std::clamp(std::exp(u) - offset, info.min_value, info.max_value);
  }
};

Axis MakeAxis(int coefficient, const Calibration& prior) {
  const CoefficientInfo& info = Calibration::Infos()[coefficient];
  Axis a;
  a.coefficient = coefficient;
  a.offset = ShiftedLogOffset(info);
  a.lo = std::log(info.min_value + a.offset);
  a.hi = std::log(info.max_value + a.offset);
  a.prior =
      std::clamp(std::log(prior.*kMembers[coefficient] + a.offset), a.lo, a.hi);
  return a;
}

bool Measured(const std::optional<double>& v) {
  return v.has_value() && !std::isnan(*v);
}

absl::Status ValidateOptions(const CalibrationFitOptions& o) {
  const std::pair<const char*, double> positive[] = {
      {"measurement_log_sd", o.measurement_log_sd},
      {"prior_log_sd", o.prior_log_sd},
      {"min_sensitivity", o.min_sensitivity}};
  for (const auto& [field, value] : positive) {
    if (!(value > 0) || !std::isfinite(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("options.", field, ": must be positive, got ", value));
    }
  }
  const std::pair<const char*, double> non_negative[] = {
      {"breakdown_weight", o.breakdown_weight},
      {"power_weight", o.power_weight},
      {"memory_weight", o.memory_weight},
      {"zero_floor_fraction", o.zero_floor_fraction},
      {"poor_fit_mape", o.poor_fit_mape},
      {"outlier_log_sds", o.outlier_log_sds}};
  for (const auto& [field, value] : non_negative) {
    if (!(value >= 0) || !std::isfinite(value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "options.", field, ": must be zero or positive, got ", value));
    }
  }
  if (!(o.max_outlier_fraction >= 0 && o.max_outlier_fraction <= 0.5)) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.max_outlier_fraction: must be in [0, 0.5], got ",
                     o.max_outlier_fraction));
  }
  if (o.max_iterations < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.max_iterations: must be >= 0, got ", o.max_iterations));
  }
  for (size_t i = 0; i < o.fixed.size(); ++i) {
    if (!Calibration{}.Get(o.fixed[i]).ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "options.fixed[", i, "]: unknown coefficient '", o.fixed[i], "'"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidatePrior(const Calibration& prior) {
  for (int j = 0; j < kCoefficients; ++j) {
    const CoefficientInfo& info = Calibration::Infos()[j];
    const double v = prior.*kMembers[j];
    if (!std::isfinite(v) || v < info.min_value || v > info.max_value) {
      return absl::InvalidArgumentError(
          absl::StrCat("prior.", info.name, ": ", v, " is outside [",
                       info.min_value, ", ", info.max_value, "]"));
    }
  }
  return absl::OkStatus();
}

// Checks one measured value: `positive` requires > 0, else >= 0.
absl::Status CheckMeasured(size_t index, const char* field, double value,
                           bool positive) {
  if (std::isfinite(value) && (positive ? value > 0 : value >= 0)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "samples[", index, "].", field, ": must be ",
      positive ? "positive" : "zero or positive", " and finite, got ", value));
}

// Validates sample `index`, resolves its layout and lists what it measured.
// `weight` is its weight scaled to an average of 1.
absl::StatusOr<PreparedSample> PrepareSample(size_t index,
                                             const CalibrationSample& s,
                                             double weight,
                                             const CalibrationFitOptions& o) {
  const std::string at = absl::StrCat("samples[", index, "]");
  absl::StatusOr<ResolvedWorkload> resolved = ResolveWorkload(s.workload);
  if (!resolved.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ".workload: ", resolved.status().message()));
  }
  absl::StatusOr<Layout> layout = RunnableLayout(*resolved, s.layout);
  if (!layout.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ".layout: ", layout.status().message()));
  }
  TESSERA_RETURN_IF_ERROR(CheckMeasured(index, "step_time_s", s.step_time_s,
                                        /*positive=*/true));
  if (s.memory_stage.has_value() &&
      (*s.memory_stage < 0 || *s.memory_stage >= layout->pp)) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ".memory_stage: must be a stage of the layout's pp ",
                     layout->pp, " (0 to ", layout->pp - 1, "), got ",
                     *s.memory_stage));
  }
  PreparedSample p;
  p.resolved = *std::move(resolved);
  p.layout = *layout;
  p.memory_stage = s.memory_stage;
  const double sd = o.measurement_log_sd;
  const double floor = o.zero_floor_fraction * s.step_time_s;
  auto add = [&](Quantity q, double measured, double term_floor, double k) {
    if (k <= 0) return;
    p.terms.push_back(Term{q, term_floor, std::log(measured + term_floor),
                           std::sqrt(weight * k) / sd});
  };
  add(Quantity::kStepTime, s.step_time_s, 0, 1);
  // It ran, so its most loaded rank fitted in the GPU's memory (headroom 0:
  // the headroom is the planner's margin, not the GPU's).
  add(Quantity::kFitsInMemory,
      static_cast<double>(p.resolved.workload.cluster.gpu.memory_bytes), 0,
      o.memory_weight);
  struct Optional {
    const char* field;
    const std::optional<double>& value;
    Quantity quantity;
    bool positive;
    double floor;
    double weight;
  };
  const Optional optionals[] = {
      {"compute_s", s.compute_s, Quantity::kCompute, true, 0,
       o.breakdown_weight},
      {"comm_s", s.comm_s, Quantity::kComm, false, floor, o.breakdown_weight},
      {"exposed_comm_s", s.exposed_comm_s, Quantity::kExposedComm, false, floor,
       o.breakdown_weight},
      {"watts_per_gpu", s.watts_per_gpu, Quantity::kWatts, true, 0,
       o.power_weight},
      {"peak_memory_bytes", s.peak_memory_bytes, Quantity::kPeakMemory, true, 0,
       o.memory_weight},
      {"peak_allocated_bytes", s.peak_allocated_bytes,
       Quantity::kPeakAllocated, true, 0, o.memory_weight}};
  for (const Optional& m : optionals) {
    if (!Measured(m.value)) continue;
    TESSERA_RETURN_IF_ERROR(
        CheckMeasured(index, m.field, *m.value, m.positive));
    add(m.quantity, *m.value, m.floor, m.weight);
  }
  return p;
}

SamplePrediction PredictSample(const PreparedSample& s,
                               const Calibration& c) {
  SamplePrediction r;
  Prediction& p = r.step;
  const Workload& w = s.resolved.workload;
  PredictStep(w, s.resolved.stack, s.layout, c,
              /*stop_if_over_memory=*/false, &p);
  r.layout_peak_bytes = p.memory.total_bytes;
  r.gpu_memory_bytes = static_cast<double>(w.cluster.gpu.memory_bytes);
  if (s.memory_stage.has_value()) {
    p.memory = StageMemory(w.model, s.layout, w.training, s.resolved.stack, c,
                           *s.memory_stage);
  }
  return r;
}

// log(predicted + floor) of every term of every sample, in order.
std::vector<double> LogPredictions(const std::vector<PreparedSample>& samples,
                                   const Calibration& c) {
  std::vector<double> out;
  for (const PreparedSample& s : samples) {
    const SamplePrediction p = PredictSample(s, c);
    for (const Term& t : s.terms) {
      out.push_back(std::log(Predicted(p, t.quantity) + t.floor));
    }
  }
  return out;
}

// The fit's rule (calibration_fit.h): free when a factor-2 move in u changes
// some measured quantity by more than min_sensitivity.
std::vector<Axis> FreeAxes(const std::vector<PreparedSample>& samples,
                           const Calibration& prior,
                           const CalibrationFitOptions& o) {
  const std::vector<double> base = LogPredictions(samples, prior);
  // A trial the prior already fits in memory identifies nothing about
  // memory (a coefficient doubled would overflow it, but that is the
  // prior's business): its kFitsInMemory term frees a coefficient only
  // where the prior calls the trial too big.
  std::vector<bool> probed;
  for (const PreparedSample& s : samples) {
    for (const Term& t : s.terms) {
      probed.push_back(t.quantity != Quantity::kFitsInMemory ||
                       base[probed.size()] > t.log_measured);
    }
  }
  std::vector<Axis> free;
  for (int j = 0; j < kCoefficients; ++j) {
    const std::string& name = Calibration::Infos()[j].name;
    if (std::find(o.fixed.begin(), o.fixed.end(), name) != o.fixed.end()) {
      continue;
    }
    const Axis axis = MakeAxis(j, prior);
    bool sensitive = false;
    for (double step : {kLogTwo, -kLogTwo}) {
      const double u = std::clamp(axis.prior + step, axis.lo, axis.hi);
      if (u == axis.prior) continue;
      Calibration moved = prior;
      moved.*kMembers[j] = axis.ToValue(u);
      const std::vector<double> probe = LogPredictions(samples, moved);
      for (size_t t = 0; t < base.size() && !sensitive; ++t) {
        sensitive =
            probed[t] && std::abs(probe[t] - base[t]) > o.min_sensitivity;
      }
      if (sensitive) break;
    }
    if (sensitive) free.push_back(axis);
  }
  return free;
}

// The objective over the free axes' u.
class Objective {
 public:
  Objective(const std::vector<PreparedSample>& samples,
            const std::vector<Axis>& axes, const Calibration& prior,
            double prior_log_sd)
      : samples_(samples),
        axes_(axes),
        prior_(prior),
        inverse_prior_sd_(1 / prior_log_sd) {
    for (const PreparedSample& s : samples) residuals_ += s.terms.size();
    residuals_ += axes.size();
  }

  size_t dimensions() const { return axes_.size(); }
  size_t residuals() const { return residuals_; }
  const Axis& axis(size_t j) const { return axes_[j]; }

  // The prior with the free coefficients at `u`.
  Calibration At(const std::vector<double>& u) const {
    Calibration c = prior_;
    for (size_t j = 0; j < axes_.size(); ++j) {
      c.*kMembers[axes_[j].coefficient] = axes_[j].ToValue(u[j]);
    }
    return c;
  }

  // Fills the residual vector at `u` and returns the objective, its squared
  // norm.
  double Residuals(const std::vector<double>& u, std::vector<double>* r) const {
    r->clear();
    const Calibration c = At(u);
    for (const PreparedSample& s : samples_) {
      const SamplePrediction p = PredictSample(s, c);
      for (const Term& t : s.terms) {
        r->push_back(t.scale * (std::log(Predicted(p, t.quantity) + t.floor) -
                                t.log_measured));
      }
    }
    for (size_t j = 0; j < axes_.size(); ++j) {
      r->push_back((u[j] - axes_[j].prior) * inverse_prior_sd_);
    }
    double sum = 0;
    for (double x : *r) sum += x * x;
    return std::isfinite(sum) ? sum : HUGE_VAL;
  }

  double Cost(const std::vector<double>& u) const {
    std::vector<double> r;
    return Residuals(u, &r);
  }

 private:
  const std::vector<PreparedSample>& samples_;
  const std::vector<Axis>& axes_;
  const Calibration& prior_;
  double inverse_prior_sd_;
  size_t residuals_ = 0;
};

// Solves the symmetric positive definite system a x = b (n x n, row-major) by
// Cholesky; false when a is not positive definite.
bool SolveSpd(std::vector<double> a, std::vector<double> b, size_t n,
              std::vector<double>* x) {
  for (size_t j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (size_t k = 0; k < j; ++k) d -= a[j * n + k] * a[j * n + k];
    if (!(d > 0)) return false;
    a[j * n + j] = std::sqrt(d);
    for (size_t i = j + 1; i < n; ++i) {
      double s = a[i * n + j];
      for (size_t k = 0; k < j; ++k) s -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = s / a[j * n + j];
    }
  }
  for (size_t i = 0; i < n; ++i) {  // L y = b
    for (size_t k = 0; k < i; ++k) b[i] -= a[i * n + k] * b[k];
    b[i] /= a[i * n + i];
  }
  for (size_t i = n; i-- > 0;) {  // L^T x = y
    for (size_t k = i + 1; k < n; ++k) b[i] -= a[k * n + i] * b[k];
    b[i] /= a[i * n + i];
  }
  *x = std::move(b);
  return true;
}

// J^T J and the gradient J^T r of the residuals r at u, J by forward
// differences (stepping inward at the upper bound).
struct NormalEquations {
  std::vector<double> jtj;  // n x n, row-major
  std::vector<double> gradient;
};

NormalEquations Linearise(const Objective& f, const std::vector<double>& u,
                          const std::vector<double>& r) {
  constexpr double kFiniteStep = 1e-6;
  const size_t n = f.dimensions();
  const size_t m = r.size();
  std::vector<double> jacobian(m * n), r_probe;
  for (size_t j = 0; j < n; ++j) {
    std::vector<double> probe = u;
    const double h =
        u[j] + kFiniteStep <= f.axis(j).hi ? kFiniteStep : -kFiniteStep;
    probe[j] += h;
    f.Residuals(probe, &r_probe);
    for (size_t i = 0; i < m; ++i) {
      jacobian[i * n + j] = (r_probe[i] - r[i]) / h;
    }
  }
  NormalEquations e{std::vector<double>(n * n, 0), std::vector<double>(n, 0)};
  for (size_t i = 0; i < m; ++i) {
    for (size_t a = 0; a < n; ++a) {
      e.gradient[a] += jacobian[i * n + a] * r[i];
      for (size_t b = 0; b < n; ++b) {
        e.jtj[a * n + b] += jacobian[i * n + a] * jacobian[i * n + b];
      }
    }
  }
  return e;
}

// The damped Gauss-Newton step (J^T J + damping * diag(J^T J)) d = -J^T r over
// the `active` axes, from u and clamped to the ranges, into *trial; false
// when the system is not positive definite.
bool DampedStep(const Objective& f, const std::vector<double>& u,
                const NormalEquations& e, const std::vector<size_t>& active,
                double damping, std::vector<double>* trial) {
  const size_t n = f.dimensions();
  const size_t k = active.size();
  std::vector<double> a(k * k), b(k), delta;
  for (size_t p = 0; p < k; ++p) {
    for (size_t q = 0; q < k; ++q)
      a[p * k + q] = e.jtj[active[p] * n + active[q]];
    a[p * k + p] *= 1 + damping;
    b[p] = -e.gradient[active[p]];
  }
  if (!SolveSpd(std::move(a), std::move(b), k, &delta)) return false;
  *trial = u;
  for (size_t p = 0; p < k; ++p) {
    const Axis& axis = f.axis(active[p]);
    (*trial)[active[p]] = std::clamp(u[active[p]] + delta[p], axis.lo, axis.hi);
  }
  return true;
}

// The log-space posterior covariance of the fitted coefficients and each
// one's standard deviation: (J^T J)^-1 at the fit (Gauss-Newton; the prior's
// rows keep it positive definite).
void PosteriorSpread(const Objective& f, const std::vector<double>& u,
                     CalibrationFit* fit) {
  const size_t n = f.dimensions();
  if (n == 0) return;
  std::vector<double> r;
  f.Residuals(u, &r);
  const NormalEquations e = Linearise(f, u, r);
  PosteriorCovariance covariance;
  covariance.matrix.assign(n * n, 0);
  bool complete = true;
  for (size_t j = 0; j < n; ++j) {
    const std::string& name = Calibration::Infos()[f.axis(j).coefficient].name;
    covariance.coefficients.push_back(name);
    std::vector<double> unit(n, 0), column;
    unit[j] = 1;
    if (!SolveSpd(e.jtj, unit, n, &column) || !(column[j] > 0)) {
      complete = false;
      continue;
    }
    for (size_t i = 0; i < n; ++i) covariance.matrix[i * n + j] = column[i];
    fit->posterior_log_sd[name] = std::sqrt(column[j]);
  }
  if (!complete) return;
  // Symmetric up to rounding; make it exactly so.
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < i; ++j) {
      const double m =
          (covariance.matrix[i * n + j] + covariance.matrix[j * n + i]) / 2;
      covariance.matrix[i * n + j] = covariance.matrix[j * n + i] = m;
    }
  }
  fit->posterior_covariance = std::move(covariance);
}

// Levenberg-Marquardt (Marquardt's diagonal scaling) from `*u`, projected onto
// the axes' ranges: a coefficient at a bound whose gradient points outward
// sits out the step. Returns the steps taken.
int LevenbergMarquardt(const Objective& f, int max_iterations,
                       std::vector<double>* u) {
  const size_t n = f.dimensions();
  std::vector<double> r;
  double cost = f.Residuals(*u, &r);
  double damping = 1e-3;
  int steps = 0;
  for (int iteration = 0; iteration < max_iterations && n > 0; ++iteration) {
    const NormalEquations e = Linearise(f, *u, r);
    std::vector<size_t> active;
    for (size_t j = 0; j < n; ++j) {
      const bool pinned_low = (*u)[j] <= f.axis(j).lo && e.gradient[j] > 0;
      const bool pinned_high = (*u)[j] >= f.axis(j).hi && e.gradient[j] < 0;
      if (!pinned_low && !pinned_high) active.push_back(j);
    }
    if (active.empty()) break;
    bool accepted = false;
    std::vector<double> trial;
    double trial_cost = cost;
    for (int attempt = 0; attempt < 12 && !accepted; ++attempt) {
      if (DampedStep(f, *u, e, active, damping, &trial)) {
        trial_cost = f.Cost(trial);
        accepted = trial_cost < cost;
      }
      damping = accepted ? std::max(damping / 3, 1e-9) : damping * 4;
    }
    if (!accepted) break;
    ++steps;
    const double decrease = cost - trial_cost;
    *u = std::move(trial);
    cost = f.Residuals(*u, &r);
    if (decrease <= 1e-12 * (1 + cost)) break;
  }
  return steps;
}

// Minimises the objective along axis j alone: a grid over its whole range,
// then golden-section search around the best grid point. Moves (*u)[j] only
// when that lowers the objective.
void LineSearch(const Objective& f, size_t j, std::vector<double>* u) {
  constexpr int kGrid = 12;
  const double lo = f.axis(j).lo, hi = f.axis(j).hi;
  std::vector<double> x = *u;
  auto cost_at = [&](double t) {
    x[j] = t;
    return f.Cost(x);
  };
  const double current = cost_at((*u)[j]);
  double best_t = (*u)[j], best = current;
  const double spacing = (hi - lo) / kGrid;
  for (int g = 0; g <= kGrid; ++g) {
    const double t = lo + spacing * g;
    const double c = cost_at(t);
    if (c < best) best = c, best_t = t;
  }
  // Golden section on [best - spacing, best + spacing].
  const double ratio = (std::sqrt(5.0) - 1) / 2;
  double a = std::max(lo, best_t - spacing), b = std::min(hi, best_t + spacing);
  double c1 = b - ratio * (b - a), c2 = a + ratio * (b - a);
  double f1 = cost_at(c1), f2 = cost_at(c2);
  for (int i = 0; i < 30; ++i) {
    if (f1 < f2) {
      b = c2, c2 = c1, f2 = f1;
      c1 = b - ratio * (b - a);
      f1 = cost_at(c1);
    } else {
      a = c1, c1 = c2, f1 = f2;
      c2 = a + ratio * (b - a);
      f2 = cost_at(c2);
    }
  }
  if (f1 < best) best = f1, best_t = c1;
  if (f2 < best) best = f2, best_t = c2;
  if (best < current) (*u)[j] = best_t;
}

double StepTimeMape(const std::vector<CalibrationSampleResidual>& residuals,
                    double CalibrationSampleResidual::*predicted) {
  double sum = 0;
  for (const CalibrationSampleResidual& r : residuals) {
    sum += std::abs(r.*predicted / r.measured_step_time_s - 1);
  }
  return sum / static_cast<double>(residuals.size());
}

// The fitted coefficients that the fit moved onto a bound of their range.
std::vector<std::string> PushedToBound(const Calibration& prior,
                                       const CalibrationFit& fit) {
  std::vector<std::string> pushed;
  for (const std::string& name : fit.at_bound) {
    if (*fit.calibration.Get(name) != *prior.Get(name)) pushed.push_back(name);
  }
  return pushed;
}

// Whether `fit` moved a coefficient onto a bound of its range and by more
// than a factor e^log_sd from the prior (to 0 counts as far).
bool PushedFarToBound(const Calibration& prior, const CalibrationFit& fit,
                      double log_sd) {
  for (const std::string& name : PushedToBound(prior, fit)) {
    const double value = *fit.calibration.Get(name);
    const double from = *prior.Get(name);
    if (value <= 0 || from <= 0 || std::abs(std::log(value / from)) > log_sd) {
      return true;
    }
  }
  return false;
}

void AddWarnings(const Calibration& prior, const CalibrationFitOptions& o,
                 CalibrationFit* fit) {
  const std::vector<std::string> pushed = PushedToBound(prior, *fit);
  for (const std::string& name : pushed) {
    const double value = *fit->calibration.Get(name);
    fit->warnings.push_back(
        absl::StrFormat("%s: the fit ended at its bound %g (prior %g)", name,
                        value, *prior.Get(name)));
  }
  if (fit->fitted_step_time_mape <= o.poor_fit_mape) return;
  std::string warning = absl::StrFormat(
      "step time is still %.0f%% off on average after the fit (%.0f%% with "
      "the prior)",
      100 * fit->fitted_step_time_mape, 100 * fit->prior_step_time_mape);
  if (!pushed.empty()) {
    absl::StrAppend(
        &warning, " with ", absl::StrJoin(pushed, ", "),
        " at a bound: the coefficients' ranges cannot explain the "
        "measurements; check that the samples' GPU and cluster figures "
        "describe the hardware that ran them (a CPU backend needs its own "
        "measured GEMM rate, memory and link bandwidths as its 'GPU')");
  } else {
    absl::StrAppend(&warning,
                    ": the cost model does not capture these trials, or "
                    "their measurements are noisy");
  }
  fit->warnings.push_back(std::move(warning));
}

// Validates the samples and prepares them, weights scaled to average 1.
absl::StatusOr<std::vector<PreparedSample>> PrepareSamples(
    const std::vector<CalibrationSample>& samples,
    const CalibrationFitOptions& options) {
  double total_weight = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const double w = samples[i].weight;
    if (!(w > 0) || !std::isfinite(w)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "samples[", i, "].weight: must be positive and finite, got ", w));
    }
    total_weight += w;
  }
  const double n = static_cast<double>(samples.size());
  std::vector<PreparedSample> prepared;
  for (size_t i = 0; i < samples.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(
        PreparedSample p,
        PrepareSample(i, samples[i], samples[i].weight * n / total_weight,
                      options));
    prepared.push_back(std::move(p));
  }
  return prepared;
}

// Fills what the fit reports besides the calibration: the fitted names,
// those at a bound, the per-sample residuals and the MAPEs.
// How `sample` compares with its predictions under `prior` and `fitted`.
CalibrationSampleResidual ResidualOf(const CalibrationSample& sample,
                                     const PreparedSample& prepared,
                                     const Calibration& prior,
                                     const Calibration& fitted) {
  const Prediction before = PredictSample(prepared, prior).step;
  const Prediction after = PredictSample(prepared, fitted).step;
  CalibrationSampleResidual r;
  r.measured_step_time_s = sample.step_time_s;
  r.prior_step_time_s = before.step_time_s;
  r.fitted_step_time_s = after.step_time_s;
  if (Measured(sample.watts_per_gpu)) {
    r.measured_watts_per_gpu = sample.watts_per_gpu;
  }
  r.prior_watts_per_gpu = before.watts_per_gpu;
  r.fitted_watts_per_gpu = after.watts_per_gpu;
  if (Measured(sample.peak_memory_bytes)) {
    r.measured_peak_memory_bytes = sample.peak_memory_bytes;
  }
  r.prior_peak_memory_bytes = before.memory.total_bytes;
  r.fitted_peak_memory_bytes = after.memory.total_bytes;
  return r;
}

void Report(const std::vector<CalibrationSample>& samples,
            const std::vector<PreparedSample>& prepared,
            const std::vector<Axis>& axes, const Calibration& prior,
            CalibrationFit* fit) {
  for (const Axis& axis : axes) {
    const CoefficientInfo& info = Calibration::Infos()[axis.coefficient];
    fit->fitted.push_back(info.name);
    const double value = fit->calibration.*kMembers[axis.coefficient];
    if (value <= info.min_value || value >= info.max_value) {
      fit->at_bound.push_back(info.name);
    }
  }
  for (size_t i = 0; i < samples.size(); ++i) {
    fit->residuals.push_back(
        ResidualOf(samples[i], prepared[i], prior, fit->calibration));
  }
  fit->samples = static_cast<int64_t>(samples.size());
  fit->prior_step_time_mape = StepTimeMape(
      fit->residuals, &CalibrationSampleResidual::prior_step_time_s);
  fit->fitted_step_time_mape = StepTimeMape(
      fit->residuals, &CalibrationSampleResidual::fitted_step_time_s);
}

// One fit of `samples`, prepared as `prepared` (PrepareSamples of exactly
// these: their weights scaled to average 1), as the header's objective
// describes, without leaving any sample out.
CalibrationFit FitAll(const std::vector<CalibrationSample>& samples,
                      const std::vector<PreparedSample>& prepared,
                      const Calibration& prior,
                      const CalibrationFitOptions& options) {
  const std::vector<Axis> axes = FreeAxes(prepared, prior, options);
  const Objective objective(prepared, axes, prior, options.prior_log_sd);
  std::vector<double> u;
  for (const Axis& a : axes) u.push_back(a.prior);

  CalibrationFit fit;
  fit.prior_log_sd = options.prior_log_sd;
  fit.prior_objective = objective.Cost(u);
  // LM, a line search along each coefficient to leave flat kinks, LM again.
  fit.iterations = LevenbergMarquardt(objective, options.max_iterations, &u);
  for (size_t j = 0; j < axes.size(); ++j) LineSearch(objective, j, &u);
  fit.iterations += LevenbergMarquardt(objective, options.max_iterations, &u);
  fit.fitted_objective = objective.Cost(u);
  fit.calibration = objective.At(u);
  Report(samples, prepared, axes, prior, &fit);
  PosteriorSpread(objective, u, &fit);
  return fit;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The samples of `kept` (indices into the caller's samples; `residuals` of
// exactly these under one fit, in the same order) whose log step-time error
// under that fit lies more than options.outlier_log_sds robust standard
// deviations from the median error, worst first, at most `room` of them.
// The robust standard deviation is 1.4826 times the median absolute
// deviation, never below options.measurement_log_sd (identical errors do
// not make every other sample an outlier).
std::vector<size_t> Outliers(
    const std::vector<size_t>& kept,
    const std::vector<CalibrationSampleResidual>& residuals,
    const CalibrationFitOptions& options, size_t room) {
  std::vector<double> errors;
  for (const CalibrationSampleResidual& r : residuals) {
    errors.push_back(std::log(r.fitted_step_time_s / r.measured_step_time_s));
  }
  const double center = Median(errors);
  std::vector<double> deviations;
  for (double e : errors) deviations.push_back(std::abs(e - center));
  const double sd =
      std::max(1.4826 * Median(deviations), options.measurement_log_sd);
  std::vector<std::pair<double, size_t>> far;  // (deviation, sample index)
  for (size_t k = 0; k < kept.size(); ++k) {
    if (deviations[k] > options.outlier_log_sds * sd) {
      far.emplace_back(deviations[k], kept[k]);
    }
  }
  std::sort(far.begin(), far.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<size_t> worst;
  for (size_t k = 0; k < far.size() && k < room; ++k) {
    worst.push_back(far[k].second);
  }
  return worst;
}

// The fit of `samples` without those in `excluded` (sorted); `kept` gets
// the indices of the others.
absl::StatusOr<CalibrationFit> FitWithout(
    const std::vector<CalibrationSample>& samples,
    const std::vector<size_t>& excluded, const Calibration& prior,
    const CalibrationFitOptions& options, std::vector<size_t>* kept) {
  std::vector<CalibrationSample> rest;
  kept->clear();
  for (size_t i = 0; i < samples.size(); ++i) {
    if (!std::binary_search(excluded.begin(), excluded.end(), i)) {
      kept->push_back(i), rest.push_back(samples[i]);
    }
  }
  TESSERA_ASSIGN_OR_RETURN(const std::vector<PreparedSample> prepared,
                           PrepareSamples(rest, options));
  CalibrationFit fit = FitAll(rest, prepared, prior, options);
  fit.excluded = excluded;
  return fit;
}

// `fit` (of every sample) made again without the outliers, up to
// kOutlierRounds times and at most options.max_outlier_fraction of the
// samples; `excluded` lists them. `fit` itself when there are none. A
// round's fit is dragged by the outliers it still holds, so it may call a
// good sample an outlier too: those the final fit of the rest explains
// (within the same rule) are taken back and the fit made once more.
absl::StatusOr<CalibrationFit> LeaveOutOutliers(
    const std::vector<CalibrationSample>& samples,
    const std::vector<PreparedSample>& prepared, const Calibration& prior,
    const CalibrationFitOptions& options, CalibrationFit fit) {
  if (options.outlier_log_sds == 0) return fit;
  const size_t max_left_out = static_cast<size_t>(
      std::floor(options.max_outlier_fraction * samples.size()));
  std::vector<size_t> kept(samples.size());
  for (size_t i = 0; i < kept.size(); ++i) kept[i] = i;
  std::vector<size_t> excluded;
  for (int round = 0; round < kOutlierRounds; ++round) {
    const std::vector<size_t> worst =
        Outliers(kept, fit.residuals, options, max_left_out - excluded.size());
    if (worst.empty()) break;
    excluded.insert(excluded.end(), worst.begin(), worst.end());
    std::sort(excluded.begin(), excluded.end());
    TESSERA_ASSIGN_OR_RETURN(
        fit, FitWithout(samples, excluded, prior, options, &kept));
  }
  if (excluded.empty()) return fit;
  // Each left-out sample judged beside the kept ones' errors under the
  // final fit: Outliers over all of them, with room for every one.
  std::vector<size_t> all(kept);
  std::vector<CalibrationSampleResidual> residuals = fit.residuals;
  for (size_t i : excluded) {
    all.push_back(i);
    residuals.push_back(
        ResidualOf(samples[i], prepared[i], prior, fit.calibration));
  }
  std::vector<size_t> still;
  for (size_t i : Outliers(all, residuals, options, all.size())) {
    if (std::binary_search(excluded.begin(), excluded.end(), i)) {
      still.push_back(i);
    }
  }
  std::sort(still.begin(), still.end());
  if (still.size() == excluded.size()) return fit;
  return FitWithout(samples, still, prior, options, &kept);
}

}  // namespace

absl::StatusOr<CalibrationFit> FitCalibration(
    const std::vector<CalibrationSample>& samples, const Calibration& prior,
    const CalibrationFitOptions& options) {
  if (samples.empty()) {
    return absl::InvalidArgumentError("samples: no samples to fit");
  }
  TESSERA_RETURN_IF_ERROR(ValidateOptions(options));
  TESSERA_RETURN_IF_ERROR(ValidatePrior(prior));
  // Every sample checked (and its residuals available) whatever is left out.
  TESSERA_ASSIGN_OR_RETURN(const std::vector<PreparedSample> prepared,
                           PrepareSamples(samples, options));
  CalibrationFit fit = FitAll(samples, prepared, prior, options);

  // Outliers: fit, leave out the samples the fit cannot explain, fit again.
  TESSERA_ASSIGN_OR_RETURN(
      CalibrationFit trimmed,
      LeaveOutOutliers(samples, prepared, prior, options, fit));
  // Undone when the rest still need a coefficient pushed onto its bound,
  // and far (more than the prior's spread) from the prior: then the ranges
  // cannot explain the samples (wrong hardware figures), not just the ones
  // left out, and leaving out those farthest off would only hide that.
  if (!PushedFarToBound(prior, trimmed, options.prior_log_sd)) {
    fit = std::move(trimmed);
  }
  if (!fit.excluded.empty()) {
    // One residual per sample again, the left-out ones under the final fit.
    std::vector<CalibrationSampleResidual> residuals;
    size_t next_kept = 0;
    for (size_t i = 0; i < samples.size(); ++i) {
      if (!std::binary_search(fit.excluded.begin(), fit.excluded.end(), i)) {
        residuals.push_back(fit.residuals[next_kept++]);
        continue;
      }
      const CalibrationSampleResidual r =
          ResidualOf(samples[i], prepared[i], prior, fit.calibration);
      fit.warnings.push_back(absl::StrFormat(
          "samples[%d] left out as an outlier: it measured %.4g s a step, "
          "%.2fx what the fit of the others predicts (%.4g s)",
          i, r.measured_step_time_s,
          r.measured_step_time_s / r.fitted_step_time_s, r.fitted_step_time_s));
      residuals.push_back(r);
      residuals.back().excluded = true;
    }
    fit.residuals = std::move(residuals);
  }
  AddWarnings(prior, options, &fit);
  // What ran but still does not fit: the memory model misses something
  // that layout holds, or the sample's GPU figure is not the GPU's.
  for (size_t i = 0; i < samples.size(); ++i) {
    const SamplePrediction p = PredictSample(prepared[i], fit.calibration);
    if (p.layout_peak_bytes >
        (1 + kOverMemoryWarningFraction) * p.gpu_memory_bytes) {
      fit.warnings.push_back(absl::StrFormat(
          "samples[%d] ran, but the fit still needs %.1f GiB per GPU on its "
          "%.1f GiB GPU (%s): the memory model misses something this layout "
          "holds, or the GPU's memory figure is not the one it ran on",
          i, p.layout_peak_bytes / kGiB, p.gpu_memory_bytes / kGiB,
          FormatLayout(prepared[i].layout)));
    }
  }
  return fit;
}

}  // namespace tessera::costmodel
