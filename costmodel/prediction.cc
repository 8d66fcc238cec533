#include "costmodel/prediction.h"

#include <string>

#include "absl/strings/str_format.h"
#include "core/units.h"
#include "costmodel/memory/memory_model.h"
#include "costmodel/step_model.h"

namespace tessera::costmodel {
namespace {


std::string MemoryReason(double needed_bytes, const ClusterConfig& cluster) {
  const double usable_bytes = UsableMemoryBytes(cluster);
  return absl::StrFormat(
      "memory: needs %.1f GiB per GPU, %.1f GiB over the usable %.1f GiB "
      "(%.1f GiB less %.1f GiB headroom)",
      needed_bytes / kGiB, (needed_bytes - usable_bytes) / kGiB,
      usable_bytes / kGiB, static_cast<double>(cluster.gpu.memory_bytes) / kGiB,
      MemoryHeadroomBytes(cluster) / kGiB);
}

}  // namespace

LayoutEvaluation PredictLayout(const ResolvedWorkload& resolved,
                               const Layout& layout,
                               const Calibration& calibration) {
  LayoutEvaluation e;
  e.layout = layout;
  absl::StatusOr<Layout> resolved_layout =
      ResolveLayout(layout, resolved.workload.cluster.world_size(),
                    resolved.workload.training.global_batch);
  if (!resolved_layout.ok()) {
    e.reason = std::string(resolved_layout.status().message());
    return e;
  }
  e.layout = *resolved_layout;
  if (absl::Status s = CheckResolvedLayout(resolved, e.layout); !s.ok()) {
    e.reason = std::string(s.message());
    return e;
  }
  e.feasible = PredictStep(resolved.workload, resolved.stack, e.layout,
                           calibration, /*stop_if_over_memory=*/false,
                           &e.prediction);
  if (!e.feasible) {
    e.reason = MemoryReason(e.prediction.memory.total_bytes,
                            resolved.workload.cluster);
  }
  return e;
}

LayoutEvaluation PredictLayout(const Workload& workload, const Layout& layout,
                               const Calibration& calibration) {
  absl::StatusOr<ResolvedWorkload> resolved = ResolveWorkload(workload);
  if (!resolved.ok()) {
    LayoutEvaluation e;
    e.layout = layout;
    e.reason = std::string(resolved.status().message());
    return e;
  }
  return PredictLayout(*resolved, layout, calibration);
}

}  // namespace tessera::costmodel
