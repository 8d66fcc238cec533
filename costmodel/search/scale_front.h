// The GPU count's trade-off for the whole run: each (count, layout) point's
// time, energy and GPU-hours per token (and for the token budget), the
// points no other beats in all three, which of them an objective picks
// (with a deadline: the least energy or GPU-hours that meets it), and what
// the last GPUs buy ("the last 1,024 GPUs shorten the run by 18% for 41% more
// energy").
//
// The GPUs of the cluster the job does not use are not charged to it by
// default: they can run other work. With charge_idle_gpus each point also
// pays their idle power (GpuSpec::idle_w) for as long as it runs.
//
//   ScalePoint p = MakeScalePoint(workload_at_count, cluster_gpus, evaluation,
//                                 /*charge_idle_gpus=*/false);
//   std::vector<ScalePoint> front = ScaleFront(points);
//   ScaleChoice c = ChooseOnFront(front, RunObjective::kEnergy, 30.0);
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/workload.h"
#include "costmodel/prediction.h"

namespace tessera::costmodel {

// What a plan minimises over GPU counts and layouts.
enum class RunObjective { kTime, kEnergy, kGpuHours };

// "time", "energy", "gpu-hours".
absl::string_view RunObjectiveName(RunObjective objective);
// The inverse of RunObjectiveName; INVALID_ARGUMENT naming the known ones.
absl::StatusOr<RunObjective> ParseRunObjective(absl::string_view name);

// One layout at one GPU count, costed for the run.
struct ScalePoint {
  int64_t nodes = 0;
  int64_t gpus = 0;
  LayoutEvaluation evaluation;  // predicted on `gpus` GPUs
  double seconds_per_token = 0;
  // The job's GPUs, plus the unused GPUs' idle power when charged.
  double joules_per_token = 0;
  double idle_joules_per_token = 0;  // the unused GPUs' share (0: uncharged)
  double gpu_seconds_per_token = 0;  // the job's GPUs only
  // For the workload's token budget (total_tokens > 0): days, MWh with the
  // idle charge, the job's GPU-hours.
  std::optional<FullRunPrediction> full_run;
};

// `evaluation` (feasible) predicted on `at_count` (the workload with the
// count's nodes); `cluster_gpus` the GPUs of the whole cluster.
ScalePoint MakeScalePoint(const Workload& at_count, int64_t cluster_gpus,
                          const LayoutEvaluation& evaluation,
                          bool charge_idle_gpus);

// The points that no other point beats or equals in all of time, energy and
// GPU-hours per token (of equal points the first stays), fastest first
// (then least energy).
std::vector<ScalePoint> ScaleFront(const std::vector<ScalePoint>& points);

// The objective's point of a front (non-empty, ScaleFront's order). Without
// a deadline: the least time, energy or GPU-hours (ties: the faster). With
// `deadline_days` (points must carry full_run): the least of the objective
// among the points whose run fits in it (time: the fastest), or, when none
// does, the fastest with meets_deadline false.
struct ScaleChoice {
  size_t index = 0;  // into the front
  bool meets_deadline = true;
};
ScaleChoice ChooseOnFront(const std::vector<ScalePoint>& front,
                          RunObjective objective,
                          std::optional<double> deadline_days);

// What going from `fewer_gpus` to `more_gpus` buys: each the fastest front
// point at its count.
struct MarginalCost {
  int64_t more_gpus = 0;
  int64_t fewer_gpus = 0;
  double time_saved_fraction = 0;  // 1 - time(more) / time(fewer)
  double extra_energy_fraction = 0;     // energy(more) / energy(fewer) - 1
  double extra_gpu_hours_fraction = 0;  // GPU-hours(more) / (fewer) - 1
};

// Between each two neighbouring counts on the front, the larger first
// (empty with fewer than two counts on it).
std::vector<MarginalCost> MarginalCosts(const std::vector<ScalePoint>& front);

// "1,024": a count with its thousands grouped.
std::string GroupedCount(int64_t n);

// "the last 1,024 GPUs (2,048 rather than 1,024) shorten the run by 18% for
// 41% more energy" (or "... lengthen ..." and "... less energy" when so).
std::string DescribeMarginalCost(const MarginalCost& cost);

}  // namespace tessera::costmodel
