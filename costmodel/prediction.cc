#include "costmodel/prediction.h"

#include <string>

#include "absl/strings/str_format.h"
#include "core/units.h"
#include "costmodel/memory/memory_model.h"
#include "costmodel/pipeline/stage_split.h"
#include "costmodel/stacks/training_stack.h"
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

LayoutEvaluation PredictLayout(const Workload& workload, const Layout& layout,
                               const Calibration& calibration) {
  LayoutEvaluation e;
  e.layout = layout;
  if (absl::Status s = ValidateWorkload(workload); !s.ok()) {
    e.reason = std::string(s.message());
    return e;
  }
  absl::StatusOr<Layout> resolved = ResolveLayout(
      layout, workload.cluster.world_size(), workload.training.global_batch);
  if (!resolved.ok()) {
    e.reason = std::string(resolved.status().message());
    return e;
  }
  e.layout = *resolved;
  absl::StatusOr<TrainingStack> stack = StackForTraining(workload.training);
  if (!stack.ok()) {
    e.reason = std::string(stack.status().message());
    return e;
  }
  if (absl::Status s = stack->CanRun(e.layout, workload.training.precision);
      !s.ok()) {
    e.reason = std::string(s.message());
    return e;
  }
  if (absl::Status s = CheckLayoutFitsModel(
          e.layout, workload.model, workload.training.seq_len,
          stack->layouts.uneven_interleaving,
          PipelineBlocksBesidesLayers(stack->pipeline_split));
      !s.ok()) {
    e.reason = std::string(s.message());
    return e;
  }
  e.feasible = PredictStep(workload, *stack, e.layout, calibration,
                           /*stop_if_over_memory=*/false, &e.prediction);
  if (!e.feasible) {
    e.reason =
        MemoryReason(e.prediction.memory.total_bytes, workload.cluster);
  }
  return e;
}

}  // namespace tessera::costmodel
