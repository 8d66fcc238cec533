// How well a search did on a sweep group, from the trials it ran in order:
// what the user pays is trials (each a whole cluster for minutes) until the
// layout it holds is close to the group's best.
//
// After k trials a search holds the layout with the best *measured*
// tokens/s among its ok trials so far (what it would recommend if stopped
// then; noise can make that not the truly best it tried). Its regret after
// k trials is 1 - true(held) / best, where true() is the sweep's value and
// best the group's best measured layout (1 while nothing ran ok).
//   trials_to_X    the least k with regret <= X (null: never);
//   failed_trials  failed trials among those run until it held a layout
//                  within 2% of the best (all it ran, when it never did);
//   gpu_hours_to_2pct  the cluster time of those trials.
// A random order is scored by its expectation, exactly and without noise
// (ScoreRandomOrder): the first of m layouts within X among n comes at
// (n + 1) / (m + 1) on average, and E[max of the first k] follows from the
// order statistics.
//
//   std::vector<ScoredTrial> seq = ...;  // in the order they ran
//   SearchScore s = ScoreSequence(seq, group.BestTokensPerSPerGpu(), 20);
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "replay/measured_sweep.h"

namespace tessera::replay {

// One trial of a search, as scoring needs it.
struct ScoredTrial {
  bool ok = false;
  double measured_tokens_per_s_per_gpu = 0;  // what the search saw
  double true_tokens_per_s_per_gpu = 0;      // the sweep's value
  double gpu_seconds = 0;                    // cluster time it took
};

struct SearchScore {
  // Expected values (random order) are fractional.
  std::optional<double> trials_to_1pct;
  std::optional<double> trials_to_2pct;
  std::optional<double> trials_to_5pct;
  double failed_trials = 0;
  double trials = 0;  // trials run in all
  double gpu_hours_to_2pct = 0;
  double gpu_hours = 0;  // all trials
  // regret_after[k-1] for k = 1 .. min(trials, curve_length).
  std::vector<double> regret_after;
};

// Scores trials in the order a search ran them against the group's best
// measured tokens/s per GPU (> 0).
SearchScore ScoreSequence(const std::vector<ScoredTrial>& trials,
                          double best_tokens_per_s_per_gpu,
                          int64_t curve_length);

// The expected score of trialing the group's layouts in a uniformly random
// order (each trial costing `gpu_seconds_per_trial` on average), without
// noise.
SearchScore ScoreRandomOrder(const SweepGroup& group,
                             double gpu_seconds_per_trial,
                             int64_t curve_length);

}  // namespace tessera::replay
