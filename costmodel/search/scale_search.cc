#include "costmodel/search/scale_search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/usable_cpus.h"
#include "costmodel/resolved_workload.h"

namespace tessera::costmodel {

std::vector<int64_t> NodeCountLadder(int64_t nodes) {
  std::set<int64_t> counts;
  for (int64_t n = 1; n <= nodes; n *= 2) {
    counts.insert(n);
    if (3 * n / 2 <= nodes && n >= 2) counts.insert(3 * n / 2);
    if (n > nodes / 2) break;  // no overflow
  }
  if (nodes >= 1) counts.insert(nodes);
  return {counts.begin(), counts.end()};
}

Workload WorkloadOnNodes(const Workload& workload, int64_t nodes) {
  Workload w = workload;
  w.cluster.nodes = nodes;
  return w;
}

absl::Status ValidateScaleOptions(const Workload& w, const ScaleOptions& o) {
  for (int64_t n : o.node_counts) {
    if (n < 1 || n > w.cluster.nodes) {
      return absl::InvalidArgumentError(
          absl::StrCat("search.scale.node_counts: ", n, " nodes is outside 1..",
                       w.cluster.nodes, " (the cluster's nodes)"));
    }
  }
  if (o.deadline_days.has_value()) {
    if (!(*o.deadline_days > 0) || !std::isfinite(*o.deadline_days)) {
      return absl::InvalidArgumentError(
          absl::StrCat("search.scale.deadline_days: must be positive and finite, got ",
                       *o.deadline_days));
    }
    if (!(w.training.total_tokens > 0)) {
      return absl::InvalidArgumentError(
          "search.scale.deadline_days: a deadline needs the token budget "
          "(training.total_tokens, --total-tokens)");
    }
  }
  return absl::OkStatus();
}

namespace {

using Clock = std::chrono::steady_clock;

// The counts to search: the options' (or the ladder), ascending, once each.
std::vector<int64_t> CountsToSearch(const Workload& workload,
                                    const ScaleOptions& options) {
  std::vector<int64_t> nodes = options.node_counts.empty()
                                   ? NodeCountLadder(workload.cluster.nodes)
                                   : options.node_counts;
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

// The workload and options checked, then the counts to search.
absl::StatusOr<std::vector<int64_t>> CheckedCountsToSearch(
    const Workload& workload, const ScaleOptions& options) {
  TESSERA_RETURN_IF_ERROR(ValidateWorkload(workload));
  TESSERA_RETURN_IF_ERROR(ValidateScaleOptions(workload, options));
  return CountsToSearch(workload, options);
}

// Whether a count's search failed because the count cannot reach the global
// batch (a property of the count) rather than for the workload's reasons.
bool CountCannotReachBatch(const absl::Status& s) {
  return absl::StartsWith(s.message(), "training.global_batch");
}

// The result from each count's search (`searched[i]` for nodes[i]): the
// counts, the front across them and the choice on it.
absl::StatusOr<ScaleResult> AssembleScale(
    const Workload& workload, const ScaleOptions& options,
    const std::vector<int64_t>& nodes,
    std::vector<absl::StatusOr<SearchResult>> searched, Clock::time_point start) {
  ScaleResult r;
  r.cluster_nodes = workload.cluster.nodes;
  r.cluster_gpus = workload.cluster.world_size();
  std::vector<ScalePoint> points;
  std::optional<absl::Status> unreachable;  // the largest count's
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Workload at = WorkloadOnNodes(workload, nodes[i]);
    ScaleCount count;
    count.nodes = nodes[i];
    count.gpus = at.cluster.world_size();
    absl::StatusOr<SearchResult>& s = searched[i];
    if (!s.ok()) {
      // Only an unreachable global batch is a property of the count; any
      // other error is the workload's, at every count.
      if (!CountCannotReachBatch(s.status())) return s.status();
      count.skipped = std::string(s.status().message());
      unreachable = s.status();
    } else {
      count.search = *std::move(s);
      for (const LayoutEvaluation& e : count.search.pareto) {
        points.push_back(
            MakeScalePoint(at, r.cluster_gpus, e, options.charge_idle_gpus));
      }
    }
    r.counts.push_back(std::move(count));
  }
  const bool any_searched =
      std::any_of(r.counts.begin(), r.counts.end(),
                  [](const ScaleCount& c) { return c.skipped.empty(); });
  if (!any_searched && unreachable.has_value()) return *unreachable;
  r.front = ScaleFront(points);
  if (!r.front.empty()) {
    r.choice = ChooseOnFront(r.front, options.objective, options.deadline_days);
    const int64_t gpus = r.front[r.choice.index].gpus;
    for (size_t i = 0; i < r.counts.size(); ++i) {
      if (r.counts[i].gpus == gpus) r.chosen_count = static_cast<int64_t>(i);
    }
  }
  r.elapsed_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return r;
}

}  // namespace

absl::StatusOr<ScaleResult> SearchScale(const Workload& workload,
                                        const ScaleOptions& options,
                                        const LayoutSearchFn& search) {
  const Clock::time_point start = Clock::now();
  TESSERA_ASSIGN_OR_RETURN(const std::vector<int64_t> nodes,
                           CheckedCountsToSearch(workload, options));
  // One count after another (`search` may call the planner service); the
  // first of the workload's own errors ends the search.
  std::vector<absl::StatusOr<SearchResult>> searched;
  for (int64_t n : nodes) {
    searched.push_back(search(WorkloadOnNodes(workload, n)));
    if (!searched.back().ok() &&
        !CountCannotReachBatch(searched.back().status())) {
      return searched.back().status();
    }
  }
  return AssembleScale(workload, options, nodes, std::move(searched), start);
}

namespace {

bool SamePoint(const ScalePoint& a, const ScalePoint& b) {
  return a.gpus == b.gpus && a.evaluation.layout == b.evaluation.layout;
}

}  // namespace

bool IsOnScaleFront(const ScaleResult& result, const ScalePoint& point) {
  return std::any_of(result.front.begin(), result.front.end(),
                     [&](const ScalePoint& f) { return SamePoint(f, point); });
}

bool IsScaleChoice(const ScaleResult& result, const ScalePoint& point) {
  const ScalePoint* chosen = result.chosen();
  return chosen != nullptr && SamePoint(*chosen, point);
}

std::optional<ScalePoint> BestOfCount(const Workload& workload,
                                      const ScaleResult& result, size_t index,
                                      const ScaleOptions& options) {
  const ScaleCount& count = result.counts[index];
  const Workload at = WorkloadOnNodes(workload, count.nodes);
  std::vector<ScalePoint> points;
  for (const LayoutEvaluation& e : count.search.pareto) {
    points.push_back(MakeScalePoint(at, result.cluster_gpus, e,
                                    options.charge_idle_gpus));
  }
  const std::vector<ScalePoint> front = ScaleFront(points);
  if (front.empty()) return std::nullopt;
  return front[ChooseOnFront(front, options.objective, std::nullopt).index];
}

std::vector<ScalePoint> LayoutAcrossCounts(const Workload& workload,
                                           const Layout& layout,
                                           const Calibration& calibration,
                                           const ScaleOptions& options) {
  const std::vector<int64_t> nodes = CountsToSearch(workload, options);
  Layout free = layout;
  free.dp = 0;
  free.grad_accum = 0;
  if (layout.shard_group == layout.dp) free.shard_group = 0;  // full
  std::vector<ScalePoint> points;
  absl::StatusOr<ResolvedWorkload> resolved = ResolveWorkload(workload);
  if (!resolved.ok()) return points;  // no layout of it is feasible
  for (int64_t n : nodes) {
    if (n < 1 || n > workload.cluster.nodes) continue;
    absl::StatusOr<ResolvedWorkload> at = OnNodes(*resolved, n);
    if (!at.ok()) continue;
    const LayoutEvaluation e = PredictLayout(*at, free, calibration);
    if (!e.feasible) continue;
    points.push_back(MakeScalePoint(at->workload, workload.cluster.world_size(),
                                    e, options.charge_idle_gpus));
  }
  return points;
}

absl::StatusOr<ScaleResult> SearchScale(const Workload& workload,
                                        const Calibration& calibration,
                                        const ScaleOptions& options) {
  const Clock::time_point start = Clock::now();
  TESSERA_ASSIGN_OR_RETURN(const std::vector<int64_t> nodes,
                           CheckedCountsToSearch(workload, options));
  // The counts' searches share nothing they write (SearchLayouts reads the
  // resolved workload, its stack resolved once here, and the calibration;
  // not the stack registry): one worker per core,
  // each taking the next count; results land by index, so the answer is the
  // one a single thread gives.
  TESSERA_ASSIGN_OR_RETURN(const ResolvedWorkload resolved,
                           ResolveWorkload(workload));
  std::vector<absl::StatusOr<SearchResult>> searched(
      nodes.size(), absl::UnknownError("count not searched"));
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i = next++; i < nodes.size(); i = next++) {
      absl::StatusOr<ResolvedWorkload> at = OnNodes(resolved, nodes[i]);
      searched[i] = at.ok() ? SearchLayouts(*at, calibration, options.layouts)
                            : absl::StatusOr<SearchResult>(at.status());
    }
  };
  const size_t workers =
      std::min<size_t>(nodes.size(), static_cast<size_t>(UsableCpuCount()));
  std::vector<std::thread> threads;
  for (size_t t = 1; t < workers; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  return AssembleScale(workload, options, nodes, std::move(searched), start);
}

}  // namespace tessera::costmodel
