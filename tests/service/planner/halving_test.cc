// Successive halving decisions on hand-made trials and candidates.
#include "planner/service/halving.h"

#include <algorithm>

#include "gtest/gtest.h"
#include "planner/service/trial_geometry.h"

namespace tessera::service {
namespace {

// Layouts told apart by micro_batch (the decisions only compare keys).
Layout L(int64_t i) {
  Layout l;
  l.micro_batch = i;
  l.dp = 2;
  l.grad_accum = 1;
  l.shard_group = 1;
  return l;
}

PoolEntry Entry(int64_t i, double predicted_per_gpu, bool trialable = true) {
  PoolEntry e;
  e.study.layout = L(i);
  e.study.feasible = true;
  if (!trialable) {
    e.not_trialable = absl::StrCat("layout ", i, " does not fit");
    return e;
  }
  TrialPlan plan;
  plan.layout = L(i);
  plan.gang_size = 1;
  e.plan = plan;
  e.key = LayoutKey(plan.layout);
  e.trial_prediction.tokens_per_s_per_gpu = predicted_per_gpu;
  e.trial_prediction.tokens_per_s = 2 * predicted_per_gpu;
  return e;
}

db::Trial T(int64_t id, int64_t i, int64_t rung, db::TrialState state,
            double measured_per_gpu = 0) {
  db::Trial t;
  t.id = id;
  t.layout = L(i);
  t.rung = rung;
  t.gang_size = 1;
  t.status = state;
  if (state == db::TrialState::kOk) {
    db::TrialMeasurement m;
    m.tokens_per_s_per_gpu = measured_per_gpu;
    m.tokens_per_s = 2 * measured_per_gpu;
    t.measured = m;
  } else if (db::IsFinal(state)) {
    t.reason = absl::StrCat("layout ", i, " failed");
  }
  return t;
}

TrialOptions Options() {
  TrialOptions o;
  o.max_trials = 8;
  o.first_rung = 3;
  o.eta = 2;
  o.steps = 3;
  o.warmup_steps = 1;
  o.stop_margin = 10;  // never, unless a test says so
  return o;
}

HalvingDecision Decide(const TrialOptions& o, const std::vector<db::Trial>& t,
                       const std::vector<PoolEntry>& pool,
                       bool time_up = false) {
  return DecideNextTrials({&o, &t, &pool, time_up});
}

std::vector<int64_t> QueuedIds(const HalvingDecision& d) {
  std::vector<int64_t> out;
  for (const db::NewTrial& t : d.queue) out.push_back(t.layout.micro_batch);
  return out;
}

using Outcome = HalvingDecision::Outcome;

TEST(HalvingTest, RungZeroIsTheBestTrialableLayoutsOncePerTrialLayout) {
  std::vector<PoolEntry> pool = {Entry(1, 90), Entry(2, 80, false),
                                 Entry(3, 70), Entry(1, 60),
                                 Entry(4, 50), Entry(5, 40)};
  const HalvingDecision d = Decide(Options(), {}, pool);
  EXPECT_EQ(d.outcome, Outcome::kContinue);
  EXPECT_EQ(QueuedIds(d), (std::vector<int64_t>{1, 3, 4}));
  for (const db::NewTrial& t : d.queue) {
    EXPECT_EQ(t.rung, 0);
    EXPECT_EQ(t.steps, 3);
    EXPECT_EQ(t.warmup_steps, 1);
    ASSERT_TRUE(t.predicted.has_value());
  }
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

TEST(HalvingTest, WaitsWhileTheRungRuns) {
  const std::vector<db::Trial> trials = {T(1, 1, 0, db::TrialState::kOk, 50),
                                         T(2, 2, 0, db::TrialState::kLeased),
                                         T(3, 3, 0, db::TrialState::kQueued)};
  const HalvingDecision d =
      Decide(Options(), trials, {Entry(1, 60), Entry(2, 55), Entry(3, 40)});
  EXPECT_EQ(d.outcome, Outcome::kContinue);
  EXPECT_TRUE(d.queue.empty());
}

TEST(HalvingTest, KeepsTheMeasuredBestHalfForTheNextRungEtaTimesLonger) {
  const std::vector<db::Trial> trials = {
      T(1, 1, 0, db::TrialState::kOk, 10), T(2, 2, 0, db::TrialState::kOk, 40),
      T(3, 3, 0, db::TrialState::kOk, 30), T(4, 4, 0, db::TrialState::kOk, 20)};
  const std::vector<PoolEntry> pool = {Entry(1, 90), Entry(2, 80), Entry(3, 70),
                                       Entry(4, 60)};
  const HalvingDecision d = Decide(Options(), trials, pool);
  EXPECT_EQ(d.outcome, Outcome::kContinue);
  EXPECT_EQ(QueuedIds(d), (std::vector<int64_t>{2, 3}));
  for (const db::NewTrial& t : d.queue) {
    EXPECT_EQ(t.rung, 1);
    EXPECT_EQ(t.steps, 6);
  }
  // The pool's (recalibrated) prediction rides along.
  EXPECT_DOUBLE_EQ(d.queue[0].predicted->tokens_per_s, 160);
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_EQ(d.notes[0],
            "rung 0 complete: keeping 2 of 4 layouts for rung 1 (6 steps)");
}

TEST(HalvingTest, ARungThatKeepsOneLayoutEndsTheStudy) {
  const std::vector<db::Trial> trials = {
      T(1, 1, 0, db::TrialState::kOk, 10), T(2, 2, 0, db::TrialState::kOk, 40),
      T(3, 2, 1, db::TrialState::kOk, 41), T(4, 1, 1, db::TrialState::kOk, 12)};
  const HalvingDecision d =
      Decide(Options(), trials, {Entry(1, 20), Entry(2, 30)});
  EXPECT_EQ(d.outcome, Outcome::kDone);
  EXPECT_EQ(d.reason, "rung 1 keeps one layout");
}

TEST(HalvingTest, StopsWhenTheBestLeadsEveryRemainingCandidate) {
  TrialOptions o = Options();
  o.stop_margin = 0.5;
  const std::vector<db::Trial> trials = {
      T(1, 1, 0, db::TrialState::kOk, 100), T(2, 2, 0, db::TrialState::kOk, 50),
      T(3, 3, 0, db::TrialState::kOk, 40), T(4, 4, 0, db::TrialState::kOk, 30)};
  // Layout 2 is predicted at 60: 100 >= 1.5 * 60.
  std::vector<PoolEntry> pool = {Entry(1, 70), Entry(2, 60), Entry(3, 40),
                                 Entry(4, 30)};
  HalvingDecision d = Decide(o, trials, pool);
  EXPECT_EQ(d.outcome, Outcome::kDone);
  EXPECT_NE(d.reason.find("leads by 67%"), std::string::npos) << d.reason;
  // An untrialed candidate predicted at 70 keeps the study going.
  pool.push_back(Entry(5, 70));
  d = Decide(o, trials, pool);
  EXPECT_EQ(d.outcome, Outcome::kContinue);
  EXPECT_EQ(QueuedIds(d), (std::vector<int64_t>{1, 2}));
}

TEST(HalvingTest, EndsWhenTheBudgetIsSpent) {
  TrialOptions o = Options();
  o.max_trials = 4;
  const std::vector<db::Trial> trials = {
      T(1, 1, 0, db::TrialState::kOk, 10), T(2, 2, 0, db::TrialState::kOk, 40),
      T(3, 3, 0, db::TrialState::kOk, 30), T(4, 4, 0, db::TrialState::kOom)};
  const HalvingDecision d = Decide(o, trials, {Entry(1, 1)});
  EXPECT_EQ(d.outcome, Outcome::kDone);
  EXPECT_EQ(d.reason, "the trial budget of 4 is spent");
  // And when the time is up, whatever runs.
  const HalvingDecision late = Decide(o, {T(1, 1, 0, db::TrialState::kLeased)},
                                      {Entry(1, 1)}, /*time_up=*/true);
  EXPECT_EQ(late.outcome, Outcome::kDone);
  EXPECT_NE(late.reason.find("time budget"), std::string::npos);
}

TEST(HalvingTest, AddsLayoutsTheRecalibratedModelPrefersWhileTheBudgetAllows) {
  // 4 in rung 0, one measured at 50; budget 8. Adding one makes rung 0 five
  // layouts (rung 1: 3): 4 + 1 + 3 = 8 fits; a second would need 5 + 1 + 3.
  const std::vector<db::Trial> trials = {
      T(1, 1, 0, db::TrialState::kOk, 50), T(2, 2, 0, db::TrialState::kQueued),
      T(3, 3, 0, db::TrialState::kQueued), T(4, 4, 0, db::TrialState::kQueued)};
  const std::vector<PoolEntry> pool = {Entry(1, 45), Entry(2, 44), Entry(3, 43),
                                       Entry(4, 42), Entry(5, 80), Entry(6, 70),
                                       Entry(7, 40)};
  const HalvingDecision d = Decide(Options(), trials, pool);
  EXPECT_EQ(d.outcome, Outcome::kContinue);
  EXPECT_EQ(QueuedIds(d), (std::vector<int64_t>{5}));
  EXPECT_EQ(d.queue[0].rung, 0);
}

TEST(HalvingTest, RungZeroSpreadsOverTheLayoutsTheModelCannotOrder) {
  // 7 layouts within the model's error of the best, first_rung 3: ranks 0, 3
  // and 6 of them (i * 6 / 2), the untrialable one skipped.
  std::vector<PoolEntry> pool = {
      Entry(1, 99), Entry(2, 98), Entry(3, 97, false),
      Entry(4, 96), Entry(5, 95), Entry(6, 94),
      Entry(7, 93), Entry(8, 92), Entry(9, 50)};
  for (size_t i = 0; i < 8; ++i) pool[i].within_error_of_best = true;
  HalvingDecision d = Decide(Options(), {}, pool);
  EXPECT_EQ(QueuedIds(d), (std::vector<int64_t>{1, 5, 8}));
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_NE(d.notes[0].find("cannot order the best 7 trialable layouts"),
            std::string::npos)
      << d.notes[0];
  // Two within error: both, then the best predicted of the rest.
  for (size_t i = 2; i < 8; ++i) pool[i].within_error_of_best = false;
  d = Decide(Options(), {}, pool);
  EXPECT_EQ(QueuedIds(d), (std::vector<int64_t>{1, 2, 4}));
}

TEST(HalvingTest, AddsLayoutsTheModelCannotRuleOutWithinItsError) {
  // Best measured 50. With the model's error at log sd 0.1 (x1.105), layout
  // 6's 46 reaches 50.8 and is added, layout 5's 45 (49.7) is not; without
  // an error neither is.
  const std::vector<db::Trial> trials = {
      T(1, 1, 0, db::TrialState::kOk, 50), T(2, 2, 0, db::TrialState::kQueued),
      T(3, 3, 0, db::TrialState::kQueued), T(4, 4, 0, db::TrialState::kQueued)};
  std::vector<PoolEntry> pool = {Entry(1, 45), Entry(2, 44), Entry(3, 43),
                                 Entry(4, 42), Entry(5, 45), Entry(6, 46)};
  EXPECT_TRUE(Decide(Options(), trials, pool).queue.empty());
  for (PoolEntry& e : pool) e.trial_log_sd = 0.1;
  const HalvingDecision d = Decide(Options(), trials, pool);
  EXPECT_EQ(QueuedIds(d), (std::vector<int64_t>{6}));
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_NE(d.notes[0].find("within its error of the best measured 50"),
            std::string::npos)
      << d.notes[0];
}

TEST(HalvingTest, ARungZeroWithoutOkTrialsTriesTheNextLayoutsThenFails) {
  const std::vector<db::Trial> failed = {T(1, 1, 0, db::TrialState::kOom),
                                         T(2, 2, 0, db::TrialState::kInvalid)};
  const std::vector<PoolEntry> pool = {Entry(1, 90), Entry(2, 80),
                                       Entry(3, 70)};
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

}  // namespace
}  // namespace tessera::service
