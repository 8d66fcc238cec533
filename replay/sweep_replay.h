// Replays a measured sweep under several search strategies, side by side on
// the same groups, noise and seed (`tessera replay`):
//   study          the planner's study loop as shipped (study_replay.h), each
//                  group on a fresh planner: a cluster it has never seen;
//   study-history  the same, every group on one planner in the file's order,
//                  so a study starts from the trials of the ones before it
//                  (studies on one cluster);
//   model-order    the layouts in the model's first ranking, no refits, no
//                  stopping (the ranking the study starts from);
//   naive          the rule "fewer tensor and pipeline stages is faster":
//                  by tp x pp x cp, then pp, then tp, then zero, then
//                  micro-batch, then the sweep's row order;
//   random         a uniformly random order, its expected value.
// Fixed orders see each layout's measurement with the same noise model as
// the study (one draw per layout), and each trial costs the study's rung-0
// steps.
//
//   SweepReplayOptions o;
//   o.strategies = {"study", "model-order", "random", "naive"};
//   TESSERA_ASSIGN_OR_RETURN(SweepReplayReport r, ReplaySweep(sweep, o));
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "replay/measured_sweep.h"
#include "replay/search_score.h"
#include "replay/study_replay.h"

namespace tessera::replay {

// The strategies, in the order they are reported.
const std::vector<std::string>& StrategyNames();

struct SweepReplayOptions {
  std::vector<std::string> strategies;  // empty: study, model-order, random,
                                        // naive
  ReplayOptions study;                  // trials, seed, noise
  int64_t curve_length = 20;            // regret_after's length at most
  std::string db_path;  // the study-history store ("": temporary)
};

// One strategy on one group.
struct GroupScore {
  std::string group;
  double best_tokens_per_s_per_gpu = 0;
  int64_t layouts = 0;  // launched layouts in the group
  SearchScore score;
  // The study strategies only:
  std::optional<StudyReplay> study;
  std::optional<double> final_regret;  // 1 - true(recommended) / best
};

// Over a strategy's groups.
struct StrategySummary {
  int64_t groups = 0;
  int64_t within_2pct_in_3 = 0;  // groups with trials_to_2pct <= 3
  std::optional<double> median_trials_to_2pct;  // never counts as infinite
  std::optional<double> max_trials_to_2pct;     // nullopt: some never did
  int64_t never_within_2pct = 0;
  double failed_trials = 0;  // sum over groups
  std::optional<double> mean_final_regret;  // study strategies
  double gpu_hours = 0;          // sum of gpu_hours_to_2pct
};

struct StrategyReport {
  std::string name;
  std::vector<GroupScore> groups;
  StrategySummary summary;
};

struct SweepReplayReport {
  std::string source;
  uint64_t seed = 0;
  double noise_log_sd = 0;
  std::vector<StrategyReport> strategies;
  std::vector<std::string> skipped;  // the sweep's
};

// INVALID_ARGUMENT for an unknown strategy (naming the known ones) or
// options the study refuses.
absl::StatusOr<SweepReplayReport> ReplaySweep(const MeasuredSweep& sweep,
                                              const SweepReplayOptions& options);

// The naive rule's order of the group's layouts.
std::vector<Layout> NaiveOrder(const SweepGroup& group);

}  // namespace tessera::replay
