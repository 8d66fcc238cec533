// The GPU count as a searched dimension: the layout search (search.h) run on
// part of the cluster, in whole nodes, with the global batch kept (micro-batch
// and gradient accumulation absorb the difference), and the trade-off of the
// run's time, energy and GPU-hours across counts and layouts
// (scale_front.h). Per-GPU throughput falls as GPUs are added (communication
// stops hiding behind compute) while each GPU draws its power, so past some
// count the last GPUs buy little time for much energy: the energy objective
// says where.
//
// The counts: a ladder of whole-node counts, 1, 2, 3, 4, 6, 8, 12, ... (2^k
// and 3 * 2^k nodes) up to the cluster, and the cluster itself; or the
// counts given. A count on which no layout reaches the global batch is
// skipped with the reason.
//
//   ScaleOptions o;
//   o.objective = RunObjective::kEnergy;
//   o.deadline_days = 30;
//   TESSERA_ASSIGN_OR_RETURN(ScaleResult r, SearchScale(w, calibration, o));
//   const ScalePoint& answer = r.front[r.choice.index];
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/workload.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/search/scale_front.h"
#include "costmodel/search/search.h"

namespace tessera::costmodel {

struct ScaleOptions {
  RunObjective objective = RunObjective::kTime;
  // The run must end within this many days (needs the token budget):
  // the least of the objective that meets it.
  std::optional<double> deadline_days;
  // Charge the GPUs the job leaves unused their idle power.
  bool charge_idle_gpus = false;
  // Whole-node counts to search, each 1..cluster nodes; empty: the ladder.
  std::vector<int64_t> node_counts;
  SearchOptions layouts;  // the layout search at each count
};

// One searched count.
struct ScaleCount {
  int64_t nodes = 0;
  int64_t gpus = 0;
  // Why the count has no layouts ("training.global_batch: ..."); "" when
  // searched.
  std::string skipped;
  SearchResult search;  // at this count (empty when skipped)
};

struct ScaleResult {
  int64_t cluster_nodes = 0;
  int64_t cluster_gpus = 0;
  std::vector<ScaleCount> counts;  // by nodes ascending
  // Non-dominated (count, layout) points, fastest first; each count's
  // points come from its own front of tokens/s against tokens/J.
  std::vector<ScalePoint> front;
  ScaleChoice choice;          // valid when !front.empty()
  int64_t chosen_count = -1;   // index into counts of the choice's count
  double elapsed_ms = 0;

  const ScalePoint* chosen() const {
    return front.empty() ? nullptr : &front[choice.index];
  }
};

// Whether `point` (a count's best) is a point of `result`'s front, or its
// chosen point: the same GPUs and layout.
bool IsOnScaleFront(const ScaleResult& result, const ScalePoint& point);
bool IsScaleChoice(const ScaleResult& result, const ScalePoint& point);

// The best point of counts[index] for `options.objective` (no deadline),
// among its front of tokens/s against tokens/J; nullopt when the count has
// no feasible layout.
std::optional<ScalePoint> BestOfCount(const Workload& workload,
                                      const ScaleResult& result, size_t index,
                                      const ScaleOptions& options);

// `layout` (resolved or not) at each count of `options` (the ladder when
// none): tp, sp, pp, vpp, cp, ZeRO, recomputation and micro-batch kept, dp
// and gradient accumulation derived for the count, a full shard group kept
// full; the counts where it is feasible, by nodes ascending: what `tessera
// predict` shows beside one layout.
std::vector<ScalePoint> LayoutAcrossCounts(const Workload& workload,
                                           const Layout& layout,
                                           const Calibration& calibration,
                                           const ScaleOptions& options);

// Whole-node counts 2^k and 3 * 2^k up to `nodes`, and `nodes`, ascending.
std::vector<int64_t> NodeCountLadder(int64_t nodes);

// The workload on `nodes` of its nodes (same GPUs, links and training).
Workload WorkloadOnNodes(const Workload& workload, int64_t nodes);

// Checks the options against the workload: counts in 1..nodes, a deadline
// positive and finite and only with a token budget. INVALID_ARGUMENT naming
// "search.scale.<field>".
absl::Status ValidateScaleOptions(const Workload& workload,
                                  const ScaleOptions& options);

// Searches one count's layouts: SearchLayouts locally, or the planner
// service's Plan for that count.
using LayoutSearchFn =
    std::function<absl::StatusOr<SearchResult>(const Workload& at_count)>;

// Searches every count with `search`, builds the front and chooses on it.
// Fails with ValidateScaleOptions' errors, with the whole cluster's error
// when no count can reach the global batch, and with any other error of a
// count's search.
absl::StatusOr<ScaleResult> SearchScale(const Workload& workload,
                                        const ScaleOptions& options,
                                        const LayoutSearchFn& search);
// The same with SearchLayouts and `calibration` at every count.
absl::StatusOr<ScaleResult> SearchScale(const Workload& workload,
                                        const Calibration& calibration,
                                        const ScaleOptions& options);

}  // namespace tessera::costmodel
