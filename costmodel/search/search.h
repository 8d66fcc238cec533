// The layout search: enumerate every layout of the layout table (docs/architecture.md) for a
// workload, reject the infeasible with a reason, rank the rest by predicted
// tokens/s and tokens/J, and find the Pareto front of the two.
//
// The space: tp over the divisors of the world up to the heads (inside a node
// and beyond), sp off/on with tp > 1, pp over the divisors of world/tp up to
// the layers, vpp 1 or any v with pp*v dividing the layers, cp over the
// divisors of world/(tp*pp) with 2*cp <= seq_len, dp the rest, micro_batch
// over the divisors of the global batch, zero 0-3 with every shard_group
// dividing dp (HSDP), recompute none/selective/full. A layout is rejected by
// the first of core's rules it breaks (ResolveLayout, then
// CheckLayoutFitsModel: kinds "layout.micro_batch", "layout.vpp",
// "layout.tp", "layout.cp", "layout.sp") or by memory ("memory"). About 1M
// layouts for llama3-405b on 16384 GPUs, searched in well under a second.
//
//   TESSERA_ASSIGN_OR_RETURN(Calibration c, DefaultCalibration(workload));
//   TESSERA_ASSIGN_OR_RETURN(SearchResult r,
//                            SearchLayouts(workload, c, SearchOptions{}));
//   const LayoutEvaluation& best = r.candidates.front();
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/layout.h"
#include "core/workload.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/prediction.h"
#include "costmodel/resolved_workload.h"

namespace tessera::costmodel {

// The most layouts SearchOptions::candidates may list.
inline constexpr int64_t kMaxSearchCandidates = 100'000;

struct SearchOptions {
  int64_t top = 10;  // candidates kept, best tokens/s first (0 = all feasible)
  // Only these layouts (empty: the whole space of the stack). Each is
  // resolved for the workload and judged by PredictLayout; duplicates (after
  // resolution) count once; one the stack or the rules refuse is rejected
  // under its reason's field ("layout.tp", "layout.zero", ...).
  std::vector<Layout> candidates = {};
};

struct SearchResult {
  int64_t searched = 0;  // layouts enumerated
  int64_t scored = 0;    // layouts that passed the rules and were costed
  int64_t feasible = 0;
  double elapsed_ms = 0;
  // Feasible layouts ranked by tokens/s, highest first, at most options.top.
  std::vector<LayoutEvaluation> candidates;
  LayoutEvaluation best_throughput;  // highest tokens/s
  LayoutEvaluation best_energy;      // highest tokens/J
  // Non-dominated in (tokens/s, tokens/J), sorted by tokens/s descending.
  std::vector<LayoutEvaluation> pareto;
  // Why layouts were rejected: reason kind ("memory", "layout.tp", ...) ->
  // how many. searched == feasible + the sum of these.
  std::map<std::string, int64_t> rejected;
};

// Searches the layout space the workload's training stack runs. Fails with
// INVALID_ARGUMENT when the workload is invalid, its stack unknown or unable
// to train in its precision, its stack options unknown, or no layout can
// reach the global batch on this many GPUs (naming training.global_batch); a
// search where every layout is infeasible returns feasible == 0 and the
// rejection counts.
absl::StatusOr<SearchResult> SearchLayouts(const Workload& workload,
                                           const Calibration& calibration,
                                           const SearchOptions& options);

// The same for a workload resolved already (the scale search resolves once
// for all its counts).
absl::StatusOr<SearchResult> SearchLayouts(const ResolvedWorkload& resolved,
                                           const Calibration& calibration,
                                           const SearchOptions& options);

}  // namespace tessera::costmodel
