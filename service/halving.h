// What a study trials next and whether it is over, decided from the stored
// trials alone, so that a restarted planner decides exactly as the one that
// stopped. Two phases:
//
// Exploration (rung 0): one trial per layout, each chosen when agents are
// free for it by its expected gain over the best measured so far under the
// refitted model and its uncertainty (trial_choice.h), never a layout the
// failures rule out; the first first_rung layouts whatever their gain, then
// while one is worth a trial. Only as many trials run at once as the agents
// can run (`trial_slots`; before the first result at most first_rung), so
// each choice uses every result before it: where the whole cluster runs one
// trial, the study decides after every trial.
//
// Confirmation (successive halving, Jamieson and Talwalkar 2016): when no
// untrialed layout is worth a trial, the measured layouts the best does not
// clearly lead (within 2 sds of the measurement noise, measurement_noise.h)
// run again, eta times longer, a rung up; their trials together measure
// each layout. Until the best leads clearly, or leads by stop_margin, or
// the budget is spent.
//
// The rules, in order:
//  1. The time budget is spent: done.
//  2. No trials yet and nothing trialable: failed, with the reasons.
//  3. Exploring (no rung above 0 yet) and agents are free: queue the
//     layouts worth a trial (up to the free slots, and leaving, once two
//     layouts are measured, two trials of the budget for confirmation).
//  4. Trials still queued or running: wait.
//  5. Nothing ran ok: failed (every layout crashed, ran out of memory, ...),
//     or, when trials are left to try but the budget is not, done.
//  6. One layout measured, or the best leads the runner-up by more than 2
//     sds or by stop_margin: done, saying by how much.
//  7. Else the contenders (every measured layout within 2 sds of the best,
//     at most the budget left) run again at the next rung; fewer than two
//     fit the budget: done.
//
//   HalvingDecision d = DecideNextTrials({&options, &trials, &pool.entries,
//                                         /*time_up=*/false, /*slots=*/1});
//   store.AddTrials(study_id, d.queue);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "db/trial_store.h"
#include "costmodel/fit/prediction_uncertainty.h"
#include "service/trial_options.h"
#include "service/trial_pool.h"

namespace tessera::service {

// A lead is clear when it exceeds this many sds of its noise.
inline constexpr double kClearLeadSds = 2.0;

struct HalvingInput {
  const TrialOptions* options = nullptr;
  const std::vector<db::Trial>* trials = nullptr;  // the study's, any order
  const std::vector<PoolEntry>* pool = nullptr;    // best predicted first
  bool time_up = false;  // the study's time budget is spent
  // Trials the agents can run at once (agents / the trials' gang size, at
  // least 1).
  int64_t trial_slots = 1;
  // The model's error before this study's forecasts (trial_choice.h).
  double prior_model_log_sd = costmodel::kDefaultModelLogSd;
};

struct HalvingDecision {
  enum class Outcome { kContinue, kDone, kFailed };
  Outcome outcome = Outcome::kContinue;
  std::string reason;               // why done or failed
  std::vector<db::NewTrial> queue;  // trials to add, in order
  std::vector<std::string> notes;   // decisions, in words
};

HalvingDecision DecideNextTrials(const HalvingInput& input);

}  // namespace tessera::service
