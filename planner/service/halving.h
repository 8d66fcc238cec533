// Successive halving over a study's trials (Jamieson and Talwalkar 2016; the
// "many short trials, longer ones for the finalists" of DESIGN.md): what to
// queue next and whether the study is over, decided from the stored trials
// alone, so that a restarted planner decides exactly as the one that stopped.
//
// The rules, in order:
//  1. The time budget is spent: done.
//  2. No trials yet: queue rung 0, the first_rung best predicted layouts that
//     can be trialed (one per trial layout); none: failed, with the reasons.
//     When more than first_rung of them are within the model's error of the
//     best (PoolEntry::within_error_of_best), the model cannot order them:
//     the first_rung are spread evenly by rank across those instead, the
//     best included, so that trials cover what the model is unsure of.
//  3. While rung 0 is the top rung and some layout ran ok: queue at rung 0
//     the untrialed layouts whose calibrated prediction (per GPU, at the
//     trial's scale), one sd of the model's error above (PoolEntry::
//     trial_log_sd), beats the best measured one: where the model cannot
//     rule a layout out, a trial decides. As long as the budget also leaves
//     room for rung 1 (ceil(n0 / eta) trials).
//  4. Trials still queued or running: wait.
//  5. The top rung r is complete. No ok trial in it: at rung 0 with nothing
//     ok yet, try the next first_rung layouts (budget permitting), else
//     failed (every layout crashed, ran out of memory, ...); above rung 0,
//     done with the lower rung's best.
//  6. The best of rung r leads every other remaining candidate (the rest of
//     rung r by measured and predicted tokens/s per GPU, the untrialed ones by
//     predicted) by stop_margin: done.
//  7. Keep k = min(ceil(n_r / eta), ok trials of r, budget left) by measured
//     tokens/s per GPU; k <= 1: done (the rung keeps one layout, or the
//     budget is spent); else queue them at rung r+1 with steps * eta^(r+1).
//
//   HalvingDecision d = DecideNextTrials({&options, &trials, &pool.entries,
//                                         /*time_up=*/false});
//   store.AddTrials(study_id, d.queue);
#pragma once

#include <string>
#include <vector>

#include "db/trial_store.h"
#include "planner/service/trial_options.h"
#include "planner/service/trial_pool.h"

namespace tessera::service {

struct HalvingInput {
  const TrialOptions* options = nullptr;
  const std::vector<db::Trial>* trials = nullptr;  // the study's, any order
  const std::vector<PoolEntry>* pool = nullptr;    // best predicted first
  bool time_up = false;  // the study's time budget is spent
};

struct HalvingDecision {
  enum class Outcome { kContinue, kDone, kFailed };
  Outcome outcome = Outcome::kContinue;
  std::string reason;               // why done or failed
  std::vector<db::NewTrial> queue;  // trials to add, in order
  std::vector<std::string> notes;   // rung decisions, in words
};

HalvingDecision DecideNextTrials(const HalvingInput& input);

}  // namespace tessera::service
