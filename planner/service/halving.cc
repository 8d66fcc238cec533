#include "planner/service/halving.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "planner/service/measured_layouts.h"

namespace tessera::service {
namespace {

using Outcome = HalvingDecision::Outcome;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

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

// Up to `count` untrialed pool entries at rung 0, skipping trialed keys and
// keys queued by this call; their keys join `trialed`.
std::vector<db::NewTrial> NextUntrialed(const std::vector<PoolEntry>& pool,
                                        std::set<std::string>& trialed,
                                        int64_t count, const TrialOptions& o) {
  std::vector<db::NewTrial> out;
  for (const PoolEntry& e : pool) {
    if (static_cast<int64_t>(out.size()) >= count) break;
    if (!e.plan || !trialed.insert(e.key).second) continue;
    out.push_back(FromPool(e, 0, o));
  }
  return out;
}

// Rung 0's `count` trials: the layouts the model cannot tell from the best
// (PoolEntry::within_error_of_best) first, spread evenly by rank across
// them when there are more than `count` (the first always included), then
// the best predicted of the rest. `*uncertain` is how many distinct
// trialable layouts were within error.
std::vector<db::NewTrial> FirstRung(const std::vector<PoolEntry>& pool,
                                    std::set<std::string>& trialed,
                                    int64_t count, const TrialOptions& o,
                                    int64_t* uncertain) {
  std::vector<const PoolEntry*> within;
  std::set<std::string> keys = trialed;
  for (const PoolEntry& e : pool) {
    if (e.plan && e.within_error_of_best && keys.insert(e.key).second) {
      within.push_back(&e);
    }
  }
  *uncertain = static_cast<int64_t>(within.size());
  std::vector<db::NewTrial> out;
  const int64_t w = *uncertain;
  if (w > count && count > 0) {
    for (int64_t i = 0; i < count; ++i) {
      // Evenly over ranks 0 .. w-1; with count 1, the first.
      const int64_t at = count == 1 ? 0 : i * (w - 1) / (count - 1);
      trialed.insert(within[at]->key);
      out.push_back(FromPool(*within[at], 0, o));
    }
    return out;
  }
  for (const PoolEntry* e : within) {
    trialed.insert(e->key);
    out.push_back(FromPool(*e, 0, o));
  }
  for (db::NewTrial& t : NextUntrialed(
           pool, trialed, count - static_cast<int64_t>(out.size()), o)) {
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

HalvingDecision DecideNextTrials(const HalvingInput& in) {
  const TrialOptions& o = *in.options;
  const std::vector<db::Trial>& trials = *in.trials;
  const std::vector<PoolEntry>& pool = *in.pool;
  HalvingDecision d;
  if (in.time_up) {
    d.outcome = Outcome::kDone;
    d.reason =
        absl::StrCat("the time budget of ", o.time_budget_s, " s is spent");
    return d;
  }
  int64_t used = static_cast<int64_t>(trials.size());
  const int64_t budget = o.max_trials;
  std::set<std::string> trialed;
  for (const db::Trial& t : trials) trialed.insert(LayoutKey(t.layout));
  std::map<std::string, const PoolEntry*> by_key;
  for (const PoolEntry& e : pool) {
    if (e.plan) by_key.emplace(e.key, &e);
  }

  // 2. The first rung.
  if (trials.empty()) {
    int64_t uncertain = 0;
    const int64_t count = std::min(o.first_rung, budget);
    d.queue = FirstRung(pool, trialed, count, o, &uncertain);
    if (d.queue.empty()) {
      d.outcome = Outcome::kFailed;
      d.reason = WhyNoneTrialable(pool);
      return d;
    }
    if (uncertain > count) {
      d.notes.push_back(absl::StrCat(
          "rung 0: the model cannot order the best ", uncertain,
          " trialable layouts (within its error of the best); trialing ",
          d.queue.size(), " spread across them (", o.StepsAtRung(0),
          " steps)"));
      return d;
    }
    d.notes.push_back(absl::StrCat("rung 0: trialing the ", d.queue.size(),
                                   " best predicted layouts (",
                                   o.StepsAtRung(0), " steps)"));
    // Better-predicted layouts that could not be trialed, and why.
    int64_t skipped = 0;
    std::string first_reason;
    const std::string last_key = LayoutKey(d.queue.back().layout);
    for (const PoolEntry& e : pool) {
      if (e.plan && e.key == last_key) break;
      if (!e.plan) {
        if (skipped++ == 0) first_reason = e.not_trialable;
      }
    }
    if (skipped > 0) {
      d.notes.push_back(absl::StrCat(
          "rung 0: skipped ", skipped, " better-predicted layout",
          skipped == 1 ? "" : "s",
          " that cannot be trialed (the first: ", first_reason, ")"));
    }
    return d;
  }

  int64_t top_rung = 0;
  bool in_flight = false;
  for (const db::Trial& t : trials) {
    top_rung = std::max(top_rung, t.rung);
    in_flight = in_flight || t.status == db::TrialState::kQueued ||
                t.status == db::TrialState::kLeased;
  }
  const std::map<std::string, MeasuredLayout> measured =
      MeasuredLayouts(trials);
  const MeasuredLayout* best_so_far = BestMeasured(measured);

  // 3. Layouts the recalibrated model now prefers, at rung 0.
  if (top_rung == 0 && best_so_far != nullptr) {
    int64_t n0 = used;
    for (const PoolEntry& e : pool) {
      if (!e.plan || trialed.count(e.key) > 0) continue;
      // One sd above its prediction: a layout the model cannot rule out.
      const double optimistic =
          e.trial_tokens_per_s_per_gpu() * std::exp(e.trial_log_sd);
      if (!(optimistic > best_so_far->tokens_per_s_per_gpu)) continue;
      const int64_t next_rung = CeilDiv(n0 + 1, o.eta);
      if (used + 1 + (next_rung > 1 ? next_rung : 0) > budget) break;
      trialed.insert(e.key);
      d.queue.push_back(FromPool(e, 0, o));
      d.notes.push_back(absl::StrFormat(
          "rung 0: adding %s: the recalibrated model predicts %.4g tokens/s "
          "per GPU, %s the best measured %.4g",
          e.key, e.trial_tokens_per_s_per_gpu(),
          e.trial_tokens_per_s_per_gpu() > best_so_far->tokens_per_s_per_gpu
              ? "above"
              : "within its error of",
          best_so_far->tokens_per_s_per_gpu));
      ++used;
      ++n0;
    }
    if (!d.queue.empty()) in_flight = true;
  }
  // 4. Wait for the rung.
  if (in_flight) return d;

  // 5. The top rung is complete.
  std::vector<const db::Trial*> rung_trials;
  std::vector<const db::Trial*> ok;
  for (const db::Trial& t : trials) {
    if (t.rung != top_rung) continue;
    rung_trials.push_back(&t);
    if (MeasuredTokensPerSPerGpu(t) > 0) ok.push_back(&t);
  }
  std::stable_sort(
      ok.begin(), ok.end(), [](const db::Trial* a, const db::Trial* b) {
        return MeasuredTokensPerSPerGpu(*a) > MeasuredTokensPerSPerGpu(*b);
      });
  const int64_t left = std::max<int64_t>(budget - used, 0);
  if (ok.empty()) {
    if (best_so_far == nullptr) {
      d.queue = NextUntrialed(pool, trialed, std::min(o.first_rung, left), o);
      if (!d.queue.empty()) {
        d.notes.push_back(
            absl::StrCat("rung 0: no layout ran ok; trying the "
                         "next ",
                         d.queue.size()));
        return d;
      }
      d.outcome = Outcome::kFailed;
      d.reason = WhyNothingRan(trials);
      return d;
    }
    d.outcome = Outcome::kDone;
    d.reason = absl::StrCat("rung ", top_rung,
                            ": no finalist ran ok; the best measured at a "
                            "lower rung stands");
    return d;
  }

  // 6. Confidently ahead.
  const double best = MeasuredTokensPerSPerGpu(*ok.front());
  double rival = 0;
  bool any_rival = false;
  for (size_t i = 1; i < ok.size(); ++i) {
    rival = std::max(rival, MeasuredTokensPerSPerGpu(*ok[i]));
    auto it = by_key.find(LayoutKey(ok[i]->layout));
    if (it != by_key.end()) {
      rival = std::max(rival, it->second->trial_tokens_per_s_per_gpu());
    }
    any_rival = true;
  }
  for (const PoolEntry& e : pool) {
    if (!e.plan || trialed.count(e.key) > 0) continue;
    rival = std::max(rival, e.trial_tokens_per_s_per_gpu());
    any_rival = true;
  }
  if (any_rival && best >= (1 + o.stop_margin) * rival) {
    d.outcome = Outcome::kDone;
    d.reason = absl::StrFormat(
        "%s leads by %.0f%%: %.4g tokens/s per GPU measured, every other "
        "remaining candidate at most %.4g (measured or predicted); the stop "
        "margin is %.0f%%",
        LayoutKey(ok.front()->layout), 100 * (best / rival - 1), best, rival,
        100 * o.stop_margin);
    return d;
  }

  // 7. Halve.
  const int64_t n = static_cast<int64_t>(rung_trials.size());
  const int64_t wanted = CeilDiv(n, o.eta);
  const int64_t k = std::min({wanted, static_cast<int64_t>(ok.size()), left});
  if (k <= 1) {
    d.outcome = Outcome::kDone;
    if (wanted <= 1) {
      d.reason = absl::StrCat("rung ", top_rung, " keeps one layout");
    } else if (ok.size() <= 1) {
      d.reason = absl::StrCat("rung ", top_rung, ": one layout ran ok");
    } else {
      d.reason = absl::StrCat("the trial budget of ", budget, " is spent");
    }
    return d;
  }
  const int64_t next = top_rung + 1;
  for (int64_t i = 0; i < k; ++i) {
    d.queue.push_back(Promote(*ok[i], next, o, by_key));
  }
  d.notes.push_back(absl::StrCat("rung ", top_rung, " complete: keeping ", k,
                                 " of ", n, " layouts for rung ", next, " (",
                                 o.StepsAtRung(next), " steps)"));
  return d;
}

}  // namespace tessera::service
