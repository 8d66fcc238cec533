// One training step of a layout under a training stack, assembled from the
// parts: compute per layer (compute/compute_time.h), tensor- and
// context-parallel collectives per layer, pipeline sends and bubble,
// data-parallel / ZeRO / FSDP traffic, the optimizer step, memory, and power.
//
// For pipeline stage i with m = grad_accum micro-batches and v = vpp:
//   micro_i  = forward + backward compute (recomputation included) of its
//              layers (+ the logits on the head stage) + v fixed costs of a
//              micro-batch on a chunk (micro_batch_overhead_s) + their
//              exposed TP/CP
//              communication + exposed per-micro-batch FSDP/ZeRO-2 traffic
//              + the exposed part of its 2*v pipeline sends, and at least
//              its layers times the host's time per layer (the host floor:
//              host_dispatch_s_per_layer, plus tp x
//              cross_node_pipeline_tp_stall_s with a pipeline across nodes)
//   once_i   = exposed once-per-step data-parallel traffic + optimizer step
// The pipeline runs at the pace of its slowest stage (the beat): every stage
// waits for it, so with beat = max_i micro_i
//   step     = (m + (pp-1)/v) * beat + max_i once_i
//   bubble   = (pp-1)/v * beat  (Narayanan et al. SC'21: (p-1)/(v*m) of the
//              m micro-batches' time) plus, on stages lighter than the beat,
//              nothing more: the breakdown is the beat stage's.
// The stages evaluated are the first (embedding), the middle one (the most
// layers under uneven stages) and the last (output layer and loss); the
// breakdown is that of the beat stage, so step_time_s = compute_s +
// exposed_comm_s + bubble_s.
//
//   Prediction p;
//   bool fits = PredictStep(workload, stack, resolved_layout, calibration,
//                           /*stop_if_over_memory=*/false, &p);
#pragma once

#include "core/layout.h"
#include "core/workload.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/comm/layer_comm.h"
#include "costmodel/memory/memory_model.h"
#include "costmodel/prediction.h"
#include "costmodel/stacks/training_stack.h"

namespace tessera::costmodel {

// Fills *out for `layout`, which must be resolved, pass core's
// CheckLayoutFitsModel for the valid `workload`, and be runnable by `stack`.
// Returns whether the peak memory fits the GPU. With `stop_if_over_memory`,
// a layout that does not fit gets only its memory filled (the search's fast
// path; the first stage's when that alone does not fit).
bool PredictStep(const Workload& workload, const TrainingStack& stack,
                 const Layout& layout, const Calibration& calibration,
                 bool stop_if_over_memory, Prediction* out);

// What one layer costs per micro-batch on every stage, and what it holds:
// the same for all the layouts that differ only in ZeRO stage and shard
// group, so the search computes it once for them (`costs` on first use).
struct LayerStep {
  LayerMemory memory;  // memory_model.h LayerMemoryOf
  bool have_costs = false;
  double forward_s = 0;   // compute
  double backward_s = 0;  // compute, recomputation included
  LayerCommTimes tp;
  LayerCommTimes cp;
  double logits_forward_s = 0;
  double send_s = 0;  // one pipeline send
};

// The LayerStep of `layout` (costs left for PredictStep to fill).
LayerStep LayerStepOf(const Workload& workload, const TrainingStack& stack,
                      const Layout& layout, const Calibration& calibration);

// PredictStep with `layer` of a layout that differs from this one at most in
// zero and shard_group (filled in on first use).
bool PredictStep(const Workload& workload, const TrainingStack& stack,
                 const Layout& layout, const Calibration& calibration,
                 LayerStep* layer, bool stop_if_over_memory, Prediction* out);

}  // namespace tessera::costmodel
