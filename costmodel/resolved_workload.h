// A workload with its training stack resolved once: the stack looked up by
// name, its options applied and its precision checked, carried beside the
// workload from then on. Everything that predicts many layouts of one
// workload (the search, the fit, the published-run checks) resolves it once
// and passes it down; the name is not looked up again per layout.
//
//   TESSERA_ASSIGN_OR_RETURN(ResolvedWorkload r, ResolveWorkload(workload));
//   LayoutEvaluation e = PredictLayout(r, layout, calibration);
#pragma once

#include "absl/status/statusor.h"
#include "core/layout.h"
#include "core/workload.h"
#include "costmodel/stacks/training_stack.h"

namespace tessera::costmodel {

struct ResolvedWorkload {
  // Valid (ValidateWorkload); training.stack is the stack's own name
  // ("TorchTitan" becomes "torchtitan").
  Workload workload;
  // The stack as this run uses it: StackForTraining(workload.training), its
  // enabled options' selective policy, pipeline split and bytes applied. Its
  // coefficient defaults are DefaultCalibration's (stack_calibration.h).
  TrainingStack stack;
};

// Validates `workload` and resolves its stack: INVALID_ARGUMENT with
// ValidateWorkload's message, or naming training.stack,
// training.stack_options or training.precision (a precision the stack does
// not train in).
absl::StatusOr<ResolvedWorkload> ResolveWorkload(const Workload& workload);

// The same workload on `nodes` nodes (the GPU count searched: the same
// training, so the same stack); INVALID_ARGUMENT from ValidateWorkload for a
// count it rejects.
absl::StatusOr<ResolvedWorkload> OnNodes(const ResolvedWorkload& resolved,
                                         int64_t nodes);

// OK when the stack can run `layout`, resolved against the workload
// (ResolveLayout, core/layout.h), and the model splits that way
// (CheckLayoutFitsModel with the stack's uneven interleaving and the blocks
// its pipeline split places besides layers). INVALID_ARGUMENT naming the
// layout field (or training.precision) that fails. The one check every
// prediction of a layout passes: PredictLayout's and the fit's.
absl::Status CheckResolvedLayout(const ResolvedWorkload& resolved,
                                 const Layout& layout);

// `layout` resolved (ResolveLayout) and checked (CheckResolvedLayout): what
// the fit and the measurement readers accept. PredictLayout does the two
// steps itself, to report the resolved layout beside a refusal.
absl::StatusOr<Layout> RunnableLayout(const ResolvedWorkload& resolved,
                                      const Layout& layout);

}  // namespace tessera::costmodel
