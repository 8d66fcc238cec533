#include "costmodel/resolved_workload.h"

#include <utility>

#include "core/status_macros.h"
#include "costmodel/pipeline/stage_split.h"

namespace tessera::costmodel {

absl::StatusOr<ResolvedWorkload> ResolveWorkload(const Workload& workload) {
  TESSERA_RETURN_IF_ERROR(ValidateWorkload(workload));
  ResolvedWorkload r;
  r.workload = workload;
  TESSERA_RETURN_IF_ERROR(ResolveTrainingStack(r.workload.training));
  TESSERA_ASSIGN_OR_RETURN(r.stack, StackForTraining(r.workload.training));
  return r;
}

absl::StatusOr<ResolvedWorkload> OnNodes(const ResolvedWorkload& resolved,
                                         int64_t nodes) {
  ResolvedWorkload r = resolved;
  r.workload.cluster.nodes = nodes;
  TESSERA_RETURN_IF_ERROR(ValidateWorkload(r.workload));
  return r;
}

absl::Status CheckResolvedLayout(const ResolvedWorkload& resolved,
                                 const Layout& layout) {
  const Workload& w = resolved.workload;
  const TrainingStack& stack = resolved.stack;
  TESSERA_RETURN_IF_ERROR(stack.CanRun(layout, w.training.precision));
  return CheckLayoutFitsModel(
      layout, w.model, w.training.seq_len, stack.layouts.uneven_interleaving,
      PipelineBlocksBesidesLayers(stack.pipeline_split));
}

absl::StatusOr<Layout> RunnableLayout(const ResolvedWorkload& resolved,
                                      const Layout& layout) {
  const Workload& w = resolved.workload;
  TESSERA_ASSIGN_OR_RETURN(
      Layout l, ResolveLayout(layout, w.cluster.world_size(),
                              w.training.global_batch));
  TESSERA_RETURN_IF_ERROR(CheckResolvedLayout(resolved, l));
  return l;
}

}  // namespace tessera::costmodel
