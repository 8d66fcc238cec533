// A study's trial decisions on hand-made trials and candidates: exploration
// by expected gain, what failures rule out, confirmation of close layouts,
// the stops.
#include "core/units.h"
#include "service/halving.h"

#include <algorithm>
#include <cmath>

#include "gtest/gtest.h"
#include "service/measured_layouts.h"
#include "service/measurement_noise.h"
#include "service/trial_choice.h"
#include "service/trial_geometry.h"

namespace tessera::service {
namespace {


// Layouts told apart by micro_batch (the decisions only compare keys);
// `tp` sets their model-parallel shape.
Layout L(int64_t i, int64_t tp = 1) {
  Layout l;
  l.micro_batch = i;
  l.tp = tp;
  l.dp = 2;
  l.grad_accum = 1;
  l.shard_group = 1;
  return l;
}

PoolEntry Entry(int64_t i, double predicted_per_gpu, bool trialable = true,
                double memory_gib = 10, int64_t tp = 1) {
  PoolEntry e;
  e.study.layout = L(i, tp);
  e.study.feasible = true;
  if (!trialable) {
    e.not_trialable = absl::StrCat("layout ", i, " does not fit");
    return e;
  }
  TrialPlan plan;
  plan.layout = L(i, tp);
  plan.gang_size = 1;
  e.plan = plan;
  e.key = LayoutKey(plan.layout);
  e.trial_prediction.tokens_per_s_per_gpu = predicted_per_gpu;
  e.trial_prediction.tokens_per_s = 2 * predicted_per_gpu;
  e.trial_prediction.memory.total_bytes = memory_gib * kGiB;
  return e;
}

// Trial `id` of layout `i`; ok trials measured `measured_per_gpu` over
// `steps` steps with no spread, predicted `predicted_per_gpu` when given.
db::Trial T(int64_t id, int64_t i, int64_t rung, db::TrialState state,
            double measured_per_gpu = 0, int64_t tp = 1, int64_t steps = 3,
            double predicted_per_gpu = 0) {
  db::Trial t;
  t.id = id;
  t.layout = L(i, tp);
  t.rung = rung;
  t.steps = steps;
  t.gang_size = 1;
  t.status = state;
  t.created_at = absl::FromUnixSeconds(1000 + 10 * id);
  if (predicted_per_gpu > 0) {
    db::TrialPrediction p;
    p.tokens_per_s = 2 * predicted_per_gpu;
    t.predicted = p;
  }
  if (db::IsFinal(state)) t.finished_at = absl::FromUnixSeconds(1005 + 10 * id);
  if (state == db::TrialState::kOk) {
    db::TrialMeasurement m;
    m.tokens_per_s_per_gpu = measured_per_gpu;
    m.tokens_per_s = 2 * measured_per_gpu;
    m.steps = steps;
    const double step = 1 / measured_per_gpu;
    m.step_time_s = {step, step, step};
    t.measured = m;
  } else if (db::IsFinal(state)) {
    t.reason = absl::StrCat("layout ", i, " failed");
  }
  return t;
}

TrialOptions Options() {
  TrialOptions o;
  o.max_trials = 8;
  o.first_rung = 1;
  o.eta = 2;
  o.steps = 3;
  o.warmup_steps = 1;
  o.stop_margin = 10;  // never, unless a test says so
  return o;
}

HalvingDecision Decide(const TrialOptions& o, const std::vector<db::Trial>& t,
                       const std::vector<PoolEntry>& pool, int64_t slots = 1,
                       double model_log_sd = 0.1, bool time_up = false) {
  return DecideNextTrials({&o, &t, &pool, time_up, slots, model_log_sd});
}

std::vector<int64_t> QueuedIds(const HalvingDecision& d) {
  std::vector<int64_t> out;
  for (const db::NewTrial& t : d.queue) out.push_back(t.layout.micro_batch);
  return out;
}

using Outcome = HalvingDecision::Outcome;

// E[max(0, X/b - 1)], X = m exp(s Z), by the midpoint rule over Z.
double GainByQuadrature(double m, double s, double b) {
  double sum = 0;
  const int n = 200000;
  const double lo = -10, hi = 10, h = (hi - lo) / n;
  for (int i = 0; i < n; ++i) {
    const double z = lo + (i + 0.5) * h;
    const double pdf = std::exp(-z * z / 2) / std::sqrt(2 * M_PI);
    sum += std::max(0.0, m * std::exp(s * z) / b - 1) * pdf * h;
  }
  return sum;
}

TEST(ExpectedGainTest, MatchesTheIntegralAndItsLimits) {
  for (const auto& [m, s, b] : std::vector<std::tuple<double, double, double>>{
           {95, 0.1, 100}, {100, 0.05, 100}, {110, 0.2, 100}, {80, 0.02, 100}}) {
    EXPECT_NEAR(ExpectedGain(m, s, b), GainByQuadrature(m, s, b), 1e-6)
        << m << " " << s << " " << b;
  }
  EXPECT_NEAR(ExpectedGain(110, 0, 100), 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(ExpectedGain(90, 0, 100), 0);
  // More uncertainty is worth more below the best.
  EXPECT_GT(ExpectedGain(95, 0.2, 100), ExpectedGain(95, 0.05, 100));
}

TEST(HalvingTest, TheFirstTrialIsTheBestPredictedThatCanBeTrialed) {
  const std::vector<PoolEntry> pool = {Entry(2, 95, false), Entry(1, 90),
                                       Entry(3, 70), Entry(4, 60)};
  const HalvingDecision d = Decide(Options(), {}, pool);
  EXPECT_EQ(d.outcome, Outcome::kContinue);
  EXPECT_EQ(QueuedIds(d), (std::vector<int64_t>{1}));
  ASSERT_EQ(d.queue.size(), 1u);
  EXPECT_EQ(d.queue[0].rung, 0);
  EXPECT_EQ(d.queue[0].steps, 3);
  EXPECT_EQ(d.queue[0].warmup_steps, 1);
  ASSERT_TRUE(d.queue[0].predicted.has_value());
  EXPECT_DOUBLE_EQ(d.queue[0].predicted->tokens_per_s, 180);
  ASSERT_EQ(d.notes.size(), 2u);
  EXPECT_EQ(d.notes[1],
            "rung 0: skipped 1 better-predicted layout that cannot be trialed "
            "(the first: layout 2 does not fit)");
}

TEST(HalvingTest, NothingTrialableFailsWithTheReasons) {
  const HalvingDecision d =
      Decide(Options(), {}, {Entry(1, 90, false), Entry(2, 80, false)});
  EXPECT_EQ(d.outcome, Outcome::kFailed);
  EXPECT_EQ(d.reason,
            "no layout can be trialed: layout 1 does not fit; layout 2 does "
            "not fit");
  EXPECT_EQ(Decide(Options(), {}, {}).reason, "no feasible layout to trial");
}

TEST(HalvingTest, AsManyAtOnceAsTheAgentsRunAndFirstRungBeforeAResult) {
  const std::vector<PoolEntry> pool = {Entry(1, 90), Entry(2, 89),
                                       Entry(3, 88), Entry(4, 87),
                                       Entry(5, 86)};
  TrialOptions o = Options();
  o.first_rung = 3;
  // Eight slots, but before any result at most first_rung (3).
  HalvingDecision d = Decide(o, {}, pool, /*slots=*/8);
  EXPECT_EQ(d.queue.size(), 3u);
  EXPECT_EQ(d.queue[0].layout.micro_batch, 1);
  // Two slots, one busy: one more.
  const std::vector<db::Trial> one_running = {
      T(1, 1, 0, db::TrialState::kLeased)};
  d = Decide(o, one_running, pool, /*slots=*/2);
  EXPECT_EQ(QueuedIds(d), (std::vector<int64_t>{2}));
  // One slot, busy: wait.
  d = Decide(o, one_running, pool, /*slots=*/1);
  EXPECT_EQ(d.outcome, Outcome::kContinue);
  EXPECT_TRUE(d.queue.empty());
}

TEST(HalvingTest, NextIsTheLargestExpectedGainNotTheBestPredicted) {
  // Measured 100. Layout 2 is predicted at 99 and well known; layout 3 at
  // 97 but its prediction rests on coefficients the trials did not pin
  // down: worth more.
  const std::vector<db::Trial> trials = {T(1, 1, 0, db::TrialState::kOk, 100)};
  std::vector<PoolEntry> pool = {Entry(1, 100), Entry(2, 99), Entry(3, 97)};
  pool[2].coefficient_log_sd = 0.15;
  const double model = 0.03;
  ASSERT_GT(ExpectedGain(97, std::hypot(0.15, model), 100),
            ExpectedGain(99, model, 100));
  HalvingDecision d = Decide(Options(), trials, pool, 1, model);
  EXPECT_EQ(QueuedIds(d), (std::vector<int64_t>{3}));
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_NE(d.notes[0].find("an expected gain of"), std::string::npos)
      << d.notes[0];
  // Without that uncertainty the better prediction wins.
  pool[2].coefficient_log_sd = 0;
  d = Decide(Options(), trials, pool, 1, model);
  EXPECT_EQ(QueuedIds(d), (std::vector<int64_t>{2}));
}

TEST(HalvingTest, StopsExploringWhenNoLayoutIsWorthATrial) {
  // Measured 100; the rest predicted 80 with the model's error at 2%: an
  // expected gain far below kMinExpectedGain. One layout measured: done.
  const std::vector<db::Trial> trials = {T(1, 1, 0, db::TrialState::kOk, 100)};
  const std::vector<PoolEntry> pool = {Entry(1, 100), Entry(2, 80),
                                       Entry(3, 79)};
  const HalvingDecision d = Decide(Options(), trials, pool, 1, 0.02);
  EXPECT_EQ(d.outcome, Outcome::kDone);
  EXPECT_TRUE(d.queue.empty());
  EXPECT_NE(d.reason.find("the only layout measured"), std::string::npos)
      << d.reason;
}

TEST(HalvingTest, TheFirstFirstRungLayoutsAreTrialedWhateverTheirGain) {
  // As above, but two layouts must be trialed: the second whatever its gain.
  TrialOptions o = Options();
  o.first_rung = 2;
  const std::vector<db::Trial> trials = {T(1, 1, 0, db::TrialState::kOk, 100)};
  const std::vector<PoolEntry> pool = {Entry(1, 100), Entry(2, 80),
                                       Entry(3, 79)};
  const HalvingDecision d = Decide(o, trials, pool, 1, 0.02);
  EXPECT_EQ(QueuedIds(d), (std::vector<int64_t>{2}));
}

TEST(HalvingTest, AnOutOfMemoryTrialRulesOutLayoutsNeedingAsMuch) {
  // Layout 1 (predicted 70 GiB) ran out of memory: layout 2 (72 GiB) is
  // ruled out though predicted faster; layout 3 (60 GiB) is next.
  const std::vector<db::Trial> trials = {T(1, 1, 0, db::TrialState::kOom)};
  const std::vector<PoolEntry> pool = {Entry(1, 100, true, 70),
                                       Entry(2, 99, true, 72),
                                       Entry(3, 90, true, 60)};
  const HalvingDecision d = Decide(Options(), trials, pool);
  EXPECT_EQ(QueuedIds(d), (std::vector<int64_t>{3}));
  ASSERT_EQ(d.notes.size(), 2u);
  EXPECT_NE(d.notes[1].find("1 untrialed layout is ruled out by the failures"),
            std::string::npos)
      << d.notes[1];
  EXPECT_NE(d.notes[1].find("72.0 GiB"), std::string::npos) << d.notes[1];
}

TEST(HalvingTest, AShapeThatCrashedIsTriedAgainOnlyWhenNothingElseIs) {
  // Layout 1 (tp 4) crashed; layout 2 shares its shape, layout 3 does not.
  const std::vector<db::Trial> crashed = {
      T(1, 1, 0, db::TrialState::kCrash, 0, /*tp=*/4)};
  std::vector<PoolEntry> pool = {Entry(1, 100, true, 10, 4),
                                 Entry(2, 99, true, 10, 4),
                                 Entry(3, 80, true, 10, 1)};
  EXPECT_EQ(QueuedIds(Decide(Options(), crashed, pool)),
            (std::vector<int64_t>{3}));
  // Once layout 3 ran, the shape's other layout is still a candidate.
  std::vector<db::Trial> both = crashed;
  both.push_back(T(2, 3, 0, db::TrialState::kOk, 80));
  EXPECT_EQ(QueuedIds(Decide(Options(), both, pool)),
            (std::vector<int64_t>{2}));
}

TEST(HalvingTest, CloseLayoutsRunAgainLongerAClearLeadEnds) {
  // Two layouts 1% apart, the noise 2% per trial (the default: no repeats,
  // no step spread): not clear. Nothing else worth a trial (0% model
  // error): both again at rung 1, eta times longer.
  std::vector<db::Trial> trials = {T(1, 1, 0, db::TrialState::kOk, 101),
                                   T(2, 2, 0, db::TrialState::kOk, 100)};
  const std::vector<PoolEntry> pool = {Entry(1, 101), Entry(2, 100),
                                       Entry(3, 50)};
  HalvingDecision d = Decide(Options(), trials, pool, 1, 0.001);
  EXPECT_EQ(d.outcome, Outcome::kContinue);
  EXPECT_EQ(QueuedIds(d), (std::vector<int64_t>{1, 2}));
  for (const db::NewTrial& t : d.queue) {
    EXPECT_EQ(t.rung, 1);
    EXPECT_EQ(t.steps, 6);
  }
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_NE(d.notes[0].find("by 1.0% +- 2.8%"), std::string::npos)
      << d.notes[0];
  // The repeats agree (101.5, 99.5): the noise is now theirs (0.35%,
  // floored at 0.5%) and the combined lead of 1.7% clears 2 sds (1%).
  trials.push_back(T(3, 1, 1, db::TrialState::kOk, 101.5, 1, 6));
  trials.push_back(T(4, 2, 1, db::TrialState::kOk, 99.5, 1, 6));
  d = Decide(Options(), trials, pool, 1, 0.001);
  EXPECT_EQ(d.outcome, Outcome::kDone);
  EXPECT_NE(d.reason.find("leads"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("2 repeated measurements"), std::string::npos)
      << d.reason;
}

TEST(HalvingTest, ALeadOfStopMarginEndsWithoutConfirming) {
  TrialOptions o = Options();
  o.stop_margin = 0.005;
  const std::vector<db::Trial> trials = {T(1, 1, 0, db::TrialState::kOk, 101),
                                         T(2, 2, 0, db::TrialState::kOk, 100)};
  const HalvingDecision d =
      Decide(o, trials, {Entry(1, 101), Entry(2, 100)}, 1, 0.001);
  EXPECT_EQ(d.outcome, Outcome::kDone);
}

TEST(HalvingTest, ExplorationLeavesTwoTrialsToConfirmAndTheBudgetEnds) {
  TrialOptions o = Options();
  o.max_trials = 4;
  // Two measured, budget 4: exploring would leave fewer than two to confirm.
  std::vector<db::Trial> trials = {T(1, 1, 0, db::TrialState::kOk, 101),
                                   T(2, 2, 0, db::TrialState::kOk, 100)};
  const std::vector<PoolEntry> pool = {Entry(1, 101), Entry(2, 100),
                                       Entry(3, 100.5)};
  HalvingDecision d = Decide(o, trials, pool, 1, 0.05);
  EXPECT_EQ(QueuedIds(d), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(d.queue[0].rung, 1);
  // Spent: done, saying how sure.
  trials.push_back(T(3, 1, 1, db::TrialState::kOk, 100, 1, 6));
  trials.push_back(T(4, 2, 1, db::TrialState::kOk, 101, 1, 6));
  d = Decide(o, trials, pool, 1, 0.05);
  EXPECT_EQ(d.outcome, Outcome::kDone);
  EXPECT_NE(d.reason.find("the trial budget of 4 is spent"), std::string::npos)
      << d.reason;
  // And when the time is up, whatever runs.
  const HalvingDecision late =
      Decide(o, {T(1, 1, 0, db::TrialState::kLeased)}, pool, 1, 0.1, true);
  EXPECT_EQ(late.outcome, Outcome::kDone);
  EXPECT_NE(late.reason.find("time budget"), std::string::npos);
}

TEST(HalvingTest, WithoutAnOkTrialTheNextLayoutsThenFailure) {
  const std::vector<db::Trial> failed = {T(1, 1, 0, db::TrialState::kOom),
                                         T(2, 2, 0, db::TrialState::kInvalid)};
  const std::vector<PoolEntry> pool = {Entry(1, 90, true, 10),
                                       Entry(2, 80, true, 5),
                                       Entry(3, 70, true, 5)};
  HalvingDecision d = Decide(Options(), failed, pool);
  EXPECT_EQ(d.outcome, Outcome::kContinue);
  EXPECT_EQ(QueuedIds(d), (std::vector<int64_t>{3}));
  std::vector<db::Trial> all_failed = failed;
  all_failed.push_back(T(3, 3, 0, db::TrialState::kCrash));
  d = Decide(Options(), all_failed, pool);
  EXPECT_EQ(d.outcome, Outcome::kFailed);
  EXPECT_EQ(d.reason,
            "no layout could be trialed: trial 1 oom: layout 1 failed; trial 2 "
            "invalid: layout 2 failed; trial 3 crash: layout 3 failed");
}

TEST(ForecastErrorTest, TheRefittedModelsForecastsUpdateThePrior) {
  // Trial 1 ran before any result (its forecast is the prior's, left out);
  // trials 2 and 3 were forecast after it: errors log(110/100), log(90/100).
  const std::vector<db::Trial> trials = {
      T(1, 1, 0, db::TrialState::kOk, 150, 1, 3, 100),
      T(2, 2, 0, db::TrialState::kOk, 110, 1, 3, 100),
      T(3, 3, 0, db::TrialState::kOk, 90, 1, 3, 100),
      T(4, 1, 1, db::TrialState::kOk, 150, 1, 6, 100)};  // a repeat
  const ForecastError e = EstimateForecastError(trials, 0.1);
  EXPECT_EQ(e.forecasts, 2);
  const double r1 = std::log(1.1), r2 = std::log(0.9);
  EXPECT_NEAR(e.log_sd, std::sqrt((2 * 0.01 + r1 * r1 + r2 * r2) / 4), 1e-12);
  EXPECT_DOUBLE_EQ(EstimateForecastError({}, 0.1).log_sd, 0.1);
}

TEST(MeasurementNoiseTest, RepeatsThenStepsThenTheDefault) {
  // No repeats, no spread: the default.
  std::vector<db::Trial> trials = {T(1, 1, 0, db::TrialState::kOk, 100)};
  EXPECT_DOUBLE_EQ(EstimateNoise(trials).log_sd, kDefaultNoiseLogSd);
  // A wide spread of steps: p90/p10 = e^0.5128 is a step sd of 0.2; the
  // median of 3 steps 1.2533 * 0.2 / sqrt(3).
  trials[0].measured->step_time_s = {1.0, std::exp(-0.2564), std::exp(0.2564)};
  EXPECT_NEAR(EstimateNoise(trials).log_sd, 1.2533 * 0.2 / std::sqrt(3.0),
              1e-3);
  // Two pairs of repeats: sd(log a/b) / sqrt(2) over them.
  trials = {T(1, 1, 0, db::TrialState::kOk, 100),
            T(2, 1, 1, db::TrialState::kOk, 104),
            T(3, 2, 0, db::TrialState::kOk, 50),
            T(4, 2, 1, db::TrialState::kOk, 49)};
  const NoiseEstimate n = EstimateNoise(trials);
  EXPECT_EQ(n.repeat_pairs, 2);
  const double d1 = std::log(100.0 / 104), d2 = std::log(50.0 / 49);
  EXPECT_NEAR(n.log_sd, std::sqrt((d1 * d1 + d2 * d2) / 2 / 2), 1e-12);
  // The layouts together: steps-weighted geometric means.
  const auto measured = MeasuredLayouts(trials);
  const auto ranked = RankMeasured(measured);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_NEAR(ranked[0]->tokens_per_s_per_gpu, std::sqrt(100.0 * 104), 1e-9);
  EXPECT_EQ(ranked[0]->trials, 2);
  EXPECT_EQ(ranked[0]->trial.id, 2);  // the higher rung stands for it
  const std::optional<Lead> lead = LeadOf(ranked, n);
  ASSERT_TRUE(lead.has_value());
  EXPECT_NEAR(lead->log_lead, std::log(std::sqrt(100.0 * 104) /
                                       std::sqrt(50.0 * 49)),
              1e-12);
  EXPECT_NEAR(lead->log_sd, n.log_sd, 1e-12);  // sqrt(1/2 + 1/2)
}

}  // namespace
}  // namespace tessera::service
