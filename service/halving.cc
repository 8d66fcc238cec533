#include "service/halving.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "service/measured_layouts.h"
#include "service/measurement_noise.h"
#include "service/trial_choice.h"

namespace tessera::service {
namespace {

using Outcome = HalvingDecision::Outcome;

db::NewTrial FromPool(const PoolEntry& e, int64_t rung, const TrialOptions& o) {
  db::NewTrial t;
  t.layout = e.plan->layout;
  t.rung = rung;
  t.steps = o.StepsAtRung(rung);
  t.warmup_steps = o.warmup_steps;
  t.gang_size = e.plan->gang_size;
  t.predicted = ToTrialPrediction(e.trial_prediction);
  return t;
}

// Trial at the next rung of a stored trial's layout, with the pool's
// (recalibrated) prediction when the layout is still in the pool.
db::NewTrial Promote(const db::Trial& trial, int64_t rung,
                     const TrialOptions& o,
                     const std::map<std::string, const PoolEntry*>& by_key) {
  db::NewTrial t;
  t.layout = trial.layout;
  t.rung = rung;
  t.steps = o.StepsAtRung(rung);
  t.warmup_steps = o.warmup_steps;
  t.gang_size = trial.gang_size;
  t.predicted = trial.predicted;
  auto it = by_key.find(LayoutKey(trial.layout));
  if (it != by_key.end()) {
    t.predicted = ToTrialPrediction(it->second->trial_prediction);
  }
  return t;
}

std::string Truncated(absl::string_view text, size_t max_chars) {
  if (text.size() <= max_chars) return std::string(text);
  return absl::StrCat(text.substr(0, max_chars), "...");
}

// "no layout could be trialed: trial 3 oom (...); trial 4 invalid (...)".
std::string WhyNothingRan(const std::vector<db::Trial>& trials) {
  std::vector<std::string> parts;
  for (const db::Trial& t : trials) {
    if (parts.size() == 4) {
      parts.push_back(absl::StrCat("and ", trials.size() - 4, " more"));
      break;
    }
    parts.push_back(
        absl::StrCat("trial ", t.id, " ", db::TrialStateName(t.status),
                     t.reason.empty() ? "" : ": ", Truncated(t.reason, 160)));
  }
  return absl::StrCat("no layout could be trialed: ",
                      absl::StrJoin(parts, "; "));
}

// "no layout can be trialed: <the first reasons>" for a pool without plans.
std::string WhyNoneTrialable(const std::vector<PoolEntry>& pool) {
  if (pool.empty()) return "no feasible layout to trial";
  std::set<std::string> reasons;
  for (const PoolEntry& e : pool) {
    if (reasons.size() == 3) break;
    reasons.insert(e.not_trialable);
  }
  return absl::StrCat("no layout can be trialed: ",
                      absl::StrJoin(reasons, "; "));
}

// What DecideNextTrials reads of the study so far.
struct StudySoFar {
  int64_t used = 0;    // trials queued, leased or finished
  int64_t budget = 0;  // the study's max_trials
  std::set<std::string> trialed;  // layout keys
  // The pool's trialable entries by layout key.
  std::map<std::string, const PoolEntry*> by_key;
  int64_t top_rung = 0;
  int64_t in_flight = 0;
  bool any_finished = false;
  std::map<std::string, MeasuredLayout> measured;
  std::vector<const MeasuredLayout*> ranked;  // into `measured`, best first
  NoiseEstimate noise;
};

// Fills `s` in place: `ranked` points into `measured`.
void Survey(const HalvingInput& in, StudySoFar& s) {
  const std::vector<db::Trial>& trials = *in.trials;
  s.used = static_cast<int64_t>(trials.size());
  s.budget = in.options->max_trials;
  for (const db::Trial& t : trials) s.trialed.insert(LayoutKey(t.layout));
  for (const PoolEntry& e : *in.pool) {
    if (e.plan) s.by_key.emplace(e.key, &e);
  }
  for (const db::Trial& t : trials) {
    s.top_rung = std::max(s.top_rung, t.rung);
    if (t.status == db::TrialState::kQueued ||
        t.status == db::TrialState::kLeased) {
      ++s.in_flight;
    } else {
      s.any_finished = true;
    }
  }
  s.measured = MeasuredLayouts(trials);
  s.ranked = RankMeasured(s.measured);
  s.noise = EstimateNoise(trials);
}

// Why a rung-0 layout is trialed: its expected gain over the best measured,
// or, before any ran, that it is the best predicted.
std::string ExploreNote(const TrialChoice& c, double best,
                        const ForecastError& forecast, const TrialOptions& o) {
  return best > 0
             ? absl::StrFormat(
                   "rung 0: trialing %s: predicted %.4g tokens/s per GPU "
                   "+-%.1f%%, an expected gain of %.2f%% over the best "
                   "measured %.4g (model error %.1f%% from %s)",
                   c.entry->key, c.entry->trial_tokens_per_s_per_gpu(),
                   100 * c.log_sd, 100 * c.expected_gain, best,
                   100 * forecast.log_sd, forecast.source)
             : absl::StrFormat(
                   "rung 0: trialing %s: the best predicted not yet "
                   "trialed, %.4g tokens/s per GPU (%d steps)",
                   c.entry->key, c.entry->trial_tokens_per_s_per_gpu(),
                   o.StepsAtRung(0));
}

// Before the first trial: the better-predicted layouts that cannot be
// trialed, and why the first cannot; nullopt when there are none.
std::optional<std::string> SkippedNote(const std::vector<PoolEntry>& pool) {
  int64_t skipped = 0;
  std::string first_reason;
  for (const PoolEntry& e : pool) {
    if (e.plan) break;
    if (skipped++ == 0) first_reason = e.not_trialable;
  }
  if (skipped == 0) return std::nullopt;
  return absl::StrCat("rung 0: skipped ", skipped, " better-predicted layout",
                      skipped == 1 ? "" : "s",
                      " that cannot be trialed (the first: ", first_reason,
                      ")");
}

// The untrialed layouts the failures so far rule out, and the first's
// reason; nullopt when none is.
std::optional<std::string> RuledOutNote(const std::vector<PoolEntry>& pool,
                                        const std::set<std::string>& trialed,
                                        const FailureBounds& failures) {
  int64_t ruled_out = 0;
  std::string why;
  for (const PoolEntry& e : pool) {
    if (!e.plan || trialed.count(e.key) > 0) continue;
    const std::string r = failures.RuledOut(e);
    if (r.empty()) continue;
    if (ruled_out++ == 0) why = r;
  }
  if (ruled_out == 0) return std::nullopt;
  return absl::StrCat("rung 0: ", ruled_out, " untrialed layout",
                      ruled_out == 1 ? " is" : "s are",
                      " ruled out by the failures (the first: ", why, ")");
}

// Step 3, explore: queues the rung-0 layouts worth a trial as agents are
// free for them (the first first_rung whatever their gain; after them two
// trials are kept for confirmation once two layouts ran). True when it
// queued any.
bool Explore(const HalvingInput& in, const StudySoFar& s, HalvingDecision& d) {
  const TrialOptions& o = *in.options;
  const std::vector<db::Trial>& trials = *in.trials;
  const std::vector<PoolEntry>& pool = *in.pool;
  int64_t free = std::max<int64_t>(in.trial_slots, 1) - s.in_flight;
  if (!s.any_finished) free = std::min(free, o.first_rung - s.used);
  const bool short_of_first_rung =
      static_cast<int64_t>(s.trialed.size()) < o.first_rung;
  const int64_t reserve = !short_of_first_rung && s.ranked.size() >= 2 ? 2 : 0;
  const int64_t allowed = std::min(free, s.budget - s.used - reserve);
  if (allowed <= 0) return false;
  const FailureBounds failures = FailureBoundsOf(trials, pool);
  const ForecastError forecast =
      EstimateForecastError(trials, in.prior_model_log_sd);
  const double best =
      s.ranked.empty() ? 0 : s.ranked.front()->tokens_per_s_per_gpu;
  const std::vector<TrialChoice> choices =
      ChooseTrials({&pool, &s.trialed, &failures, best, forecast.log_sd,
                    short_of_first_rung ? -1.0 : kMinExpectedGain},
                   allowed);
  for (const TrialChoice& c : choices) {
    d.queue.push_back(FromPool(*c.entry, 0, o));
    d.notes.push_back(ExploreNote(c, best, forecast, o));
  }
  if (d.queue.empty()) return false;
  if (trials.empty()) {
    if (std::optional<std::string> note = SkippedNote(pool)) {
      d.notes.push_back(*std::move(note));
    }
  }
  if (std::optional<std::string> note =
          RuledOutNote(pool, s.trialed, failures)) {
    d.notes.push_back(*std::move(note));
  }
  return true;
}

// Steps 6 and 7: done when the best leads clearly, or by the stop margin, or
// when the budget is spent; else the layouts the best does not clearly lead
// run again at the next rung.
void ConfirmOrStop(const HalvingInput& in, const StudySoFar& s,
                   HalvingDecision& d) {
  const TrialOptions& o = *in.options;
  const MeasuredLayout& best = *s.ranked.front();
  const std::string best_key = LayoutKey(best.trial.layout);
  const std::optional<Lead> lead = LeadOf(s.ranked, s.noise);
  const std::string noise_text =
      absl::StrFormat("measurement noise %.1f%% per trial, from %s",
                      100 * s.noise.log_sd, s.noise.source);
  if (!lead) {
    d.outcome = Outcome::kDone;
    d.reason = absl::StrCat(best_key,
                            " is the only layout measured and no other is "
                            "worth a trial");
    return;
  }
  const std::string lead_text =
      absl::StrCat(best_key, " leads ", LayoutKey(s.ranked[1]->trial.layout),
                   " by ", lead->Text(), " (", noise_text, ")");
  if (lead->Clear(kClearLeadSds) ||
      std::exp(lead->log_lead) - 1 >= o.stop_margin) {
    d.outcome = Outcome::kDone;
    d.reason = absl::StrCat(lead_text, "; no untrialed layout is worth a "
                                       "trial");
    return;
  }
  // Confirm: the layouts the best does not clearly lead, again.
  std::vector<const MeasuredLayout*> contenders;
  for (const MeasuredLayout* m : s.ranked) {
    const double gap = std::log(best.tokens_per_s_per_gpu /
                                m->tokens_per_s_per_gpu);
    const double sd = s.noise.log_sd *
                      std::sqrt(1.0 / static_cast<double>(best.trials) +
                                1.0 / static_cast<double>(m->trials));
    if (gap <= kClearLeadSds * sd) contenders.push_back(m);
  }
  const int64_t left = std::max<int64_t>(s.budget - s.used, 0);
  const int64_t k =
      std::min<int64_t>(static_cast<int64_t>(contenders.size()), left);
  if (k < 2) {
    d.outcome = Outcome::kDone;
    d.reason = absl::StrCat("the trial budget of ", s.budget, " is spent; ",
                            lead_text);
    return;
  }
  const int64_t next = s.top_rung + 1;
  for (int64_t i = 0; i < k; ++i) {
    d.queue.push_back(Promote(contenders[static_cast<size_t>(i)]->trial, next,
                              o, s.by_key));
  }
  d.notes.push_back(absl::StrCat(
      "confirming: ", lead_text, "; running the ", k,
      " layouts within ", kClearLeadSds, " sds of the best again at rung ",
      next, " (", o.StepsAtRung(next), " steps)"));
}

}  // namespace

HalvingDecision DecideNextTrials(const HalvingInput& in) {
  const TrialOptions& o = *in.options;
  HalvingDecision d;
  // 1. Out of time.
  if (in.time_up) {
    d.outcome = Outcome::kDone;
    d.reason =
        absl::StrCat("the time budget of ", o.time_budget_s, " s is spent");
    return d;
  }
  StudySoFar s;
  Survey(in, s);
  // 2. Nothing to trial at all.
  if (in.trials->empty() && s.by_key.empty()) {
    d.outcome = Outcome::kFailed;
    d.reason = WhyNoneTrialable(*in.pool);
    return d;
  }
  // 3. Explore: the layouts worth a trial, as agents are free for them.
  if (s.top_rung == 0 && Explore(in, s, d)) return d;
  // 4. Wait for the trials out there.
  if (s.in_flight > 0) return d;
  // 5. Nothing ran ok.
  if (s.ranked.empty()) {
    d.outcome = Outcome::kFailed;
    d.reason = s.used >= s.budget
                   ? absl::StrCat("the trial budget of ", s.budget,
                                  " is spent and ", WhyNothingRan(*in.trials))
                   : WhyNothingRan(*in.trials);
    return d;
  }
  // 6. A clear best, or 7. confirm the contenders.
  ConfirmOrStop(in, s, d);
  return d;
}

}  // namespace tessera::service
