// One training step of a layout, assembled from the parts: compute per layer
// (compute_time.h), tensor- and context-parallel collectives per layer,
// pipeline sends and bubble, data-parallel / ZeRO / FSDP traffic, the
// optimizer step, memory, and power.
//
// For pipeline stage i with m = grad_accum micro-batches:
//   micro_i  = forward + backward compute (+ recompute) of its layers (+ the
//              logits on the last stage) + their exposed TP/CP communication
//              + exposed FSDP/ZeRO-2 traffic of one micro-batch
//   step_i   = m * (micro_i + 2*vpp pipeline sends) + bubble_i
//              + exposed once-per-step data-parallel traffic + optimizer step
//   bubble_i = (pp-1)/(vpp*m) * m * micro_i  (Narayanan et al. SC'21)
// The step is the slowest of the first and last stage (the ones that differ:
// embedding and extra layers vs. output layer), and the breakdown is that
// stage's, so step_time_s = compute_s + exposed_comm_s + bubble_s.
//
//   Prediction p;
//   bool fits = PredictStep(workload, resolved_layout, calibration,
//                           /*stop_if_over_memory=*/false, &p);
#pragma once

#include "core/layout.h"
#include "core/workload.h"
#include "planner/calibration.h"
#include "planner/prediction.h"

namespace tessera::planner {

// Fills *out for `layout`, which must be resolved and pass core's
// CheckLayoutFitsModel for the valid `workload`. Returns whether the peak
// memory fits the GPU. With `stop_if_over_memory`, a layout that does not fit
// gets only its memory filled (the search's fast path).
bool PredictStep(const Workload& workload, const Layout& layout,
                 const Calibration& calibration, bool stop_if_over_memory,
                 Prediction* out);

}  // namespace tessera::planner
