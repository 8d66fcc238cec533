// Which untrialed layout a study trials next: the one with the largest
// expected gain over the best measured so far, under the calibrated model's
// prediction and how uncertain that prediction is, among the layouts the
// study's failures have not ruled out.
//
// Expected gain (expected improvement, Jones et al. 1998): a layout's
// tokens/s is taken as log-normal around its calibrated prediction m with
// log-sd s; with b the best measured,
//   gain = E[max(0, X / b - 1)] = (m / b) e^(s^2 / 2) Phi(d + s) - Phi(d),
//   d = log(m / b) / s,
// so a layout predicted a little below the best but uncertain can be worth
// more than one predicted level with it and well known. A layout is worth a
// trial while its gain is at least kMinExpectedGain; before anything was
// measured, the best predicted comes first. Layouts chosen together (free
// agents for several trials) are chosen one after another, each assuming
// the ones before measure as predicted ("kriging believer"), which spreads
// them over what the model is unsure of.
//
// The uncertainty s of a prediction: the coefficients' part (how far the
// calibration's covariance moves this layout, PoolEntry::
// coefficient_log_sd) and the model's own error, estimated from the
// study's forecasts: each rung-0 trial after the study's first was
// predicted, before it ran, by the calibration fitted to the trials before
// it; the log errors r of those forecasts update a prior error s0 (the
// stack defaults' error on published runs) as a variance with nu0 = 2
// pseudo-forecasts: s^2 = (nu0 s0^2 + sum r^2) / (nu0 + n). A model that
// forecasts this cluster well explores little; one that does not, more.
//
// What failures rule out: a trial that ran out of memory bounds the memory
// that fits: an untrialed layout predicted (by the current calibration) to
// need at least as much as the smallest prediction among the layouts that
// ran out is not trialed. A layout that crashed, timed out or went NaN for
// another reason marks its model-parallel shape (tp, pp, vpp, cp): other
// layouts of that shape are trialed only when nothing else is worth one.
//
//   ForecastError e = EstimateForecastError(trials, costmodel::kDefaultModelLogSd);
//   FailureBounds f = FailureBoundsOf(trials, pool);
//   std::vector<TrialChoice> next =
//       ChooseTrials({&pool, &trialed, &f, best_measured, e.log_sd}, 1);
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "db/trial_store.h"
#include "service/trial_pool.h"

namespace tessera::service {

// A layout is worth a trial while its expected gain over the best measured
// is at least this (a fraction of the best). Chosen on the usp_sweep.json
// replay (in-sample): lower spends trials on layouts the noise hides,
// higher stops before the model's second guesses are checked.
inline constexpr double kMinExpectedGain = 0.002;

// Pseudo-forecasts the prior model error counts as.
inline constexpr double kPriorForecasts = 2;

// E[max(0, X / best - 1)] for X log-normal with median `predicted` and
// log-sd `log_sd` (>= 0); with log_sd 0, max(0, predicted / best - 1).
// `best` > 0.
double ExpectedGain(double predicted, double log_sd, double best);

struct ForecastError {
  double log_sd = 0;
  int64_t forecasts = 0;  // trials that measured a forecast
  std::string source;     // one line
};

// The model's error on layouts it had not measured (see above), from the
// study's trials and the prior error `prior_log_sd`.
ForecastError EstimateForecastError(const std::vector<db::Trial>& trials,
                                    double prior_log_sd);

// What the study's failed trials rule out.
struct FailureBounds {
  // Untrialed layouts predicted to need at least this many bytes per GPU
  // do not fit (set after an out-of-memory trial), and the trial that says
  // so.
  std::optional<double> memory_bytes;
  int64_t memory_trial_id = 0;
  // Model-parallel shapes ("tp=2,pp=4,vpp=1,cp=1") of layouts that failed
  // otherwise, with the trial.
  std::map<std::string, int64_t> failed_shapes;

  // Why `entry` is not to be trialed ("" when it may be): memory only.
  std::string RuledOut(const PoolEntry& entry) const;
  bool FailedShape(const PoolEntry& entry) const;
};

// The model-parallel shape of a layout, as FailureBounds keys it.
std::string ShapeKey(const Layout& layout);

FailureBounds FailureBoundsOf(const std::vector<db::Trial>& trials,
                              const std::vector<PoolEntry>& pool);

struct ChoiceInput {
  const std::vector<PoolEntry>* pool = nullptr;  // best predicted first
  const std::set<std::string>* trialed = nullptr;  // keys already trialed
  const FailureBounds* failures = nullptr;
  double best_measured = 0;  // tokens/s per GPU; 0: nothing measured yet
  double model_log_sd = 0;   // ForecastError::log_sd
  // The least expected gain worth a trial (below 0: any layout is).
  double min_gain = kMinExpectedGain;
};

struct TrialChoice {
  const PoolEntry* entry = nullptr;
  double log_sd = 0;         // of its prediction
  double expected_gain = 0;  // over the best measured (or believed) then;
                             // infinite before anything was measured
};

// Up to `count` untrialed, not ruled-out entries worth a trial (expected
// gain at least input.min_gain), the most expected gain first (see above).
std::vector<TrialChoice> ChooseTrials(const ChoiceInput& input, int64_t count);

}  // namespace tessera::service
