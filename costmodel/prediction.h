// What the cost model predicts for one layout of one workload: the step time
// and its breakdown (compute, communication, exposed communication, bubble),
// throughput, MFU, memory per GPU, power and energy, and the full run.
//
//   Calibration calibration;  // defaults, or fitted from trials
//   LayoutEvaluation e = PredictLayout(workload, layout, calibration);
//   if (!e.feasible) std::cout << e.reason;
//   else std::cout << e.prediction.tokens_per_s;
#pragma once

#include <optional>
#include <string>

#include "core/layout.h"
#include "core/workload.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/memory/memory_model.h"
#include "costmodel/power/power.h"
#include "costmodel/resolved_workload.h"

namespace tessera::costmodel {

// Per optimizer step, per GPU unless said otherwise.
struct Prediction {
  double step_time_s = 0;
  double tokens_per_s = 0;  // whole cluster
  double tokens_per_s_per_gpu = 0;
  double tflops_per_gpu = 0;  // model FLOPs (no recomputation) / step time
  double mfu = 0;             // tflops_per_gpu / dense peak
  double memory_gib_per_gpu = 0;
  MemoryBreakdown memory;
  double compute_s = 0;       // forward + backward + recompute + optimizer
  // Of compute_s, the compute's slowdown beside the data- and
  // context-parallel collectives it hides (comm/overlap.h).
  double overlap_slowdown_s = 0;
  // Of compute_s, the GPU's wait for the host to issue its micro-batches
  // (host_dispatch_s_per_layer, cross_node_pipeline_tp_stall_s): the
  // host-bound part of a small micro-batch.
  double host_wait_s = 0;
  double comm_s = 0;          // all communication, hidden or not
  double exposed_comm_s = 0;  // communication on the critical path
  double bubble_s = 0;        // pipeline bubble
  // Communication by parallelism, each the total time of that kind.
  double tp_comm_s = 0;
  double pp_comm_s = 0;
  double dp_comm_s = 0;  // DDP/ZeRO/FSDP gradient and parameter traffic
  double cp_comm_s = 0;
  // exposed_comm_s by parallelism, on the stage that sets the step: each
  // kind's per-micro-batch exposure times the micro-batches; dp_exposed_s
  // is the rest (ZeRO/FSDP and gradient traffic, per micro-batch and once
  // per step), so that the four add up to exposed_comm_s.
  double tp_exposed_s = 0;
  double pp_exposed_s = 0;
  double dp_exposed_s = 0;
  double cp_exposed_s = 0;
  double watts_per_gpu = 0;
  double tokens_per_joule = 0;
  std::optional<FullRunPrediction> full_run;  // when total_tokens > 0
};

// A layout with its verdict: feasible with a prediction, or infeasible with
// the reason ("memory: needs 93.1 GiB per GPU, 13.6 GiB over the usable 79.5
// GiB", "layout.tp: 3 does not divide heads 32", "layout.zero: the
// torchtitan stack runs zero 0, 2, 3, not 1", ...).
struct LayoutEvaluation {
  Layout layout;  // resolved (dp, grad_accum, shard_group filled in)
  bool feasible = false;
  std::string reason;
  Prediction prediction;  // memory is filled in even when memory-infeasible
};

// Resolves `layout` against the workload (core/layout.h rules), checks it
// (CheckResolvedLayout: the stack runs it, the model splits that way),
// checks memory and predicts its step. Never fails: an invalid or
// infeasible layout comes back with feasible = false and the reason.
// `calibration` is usually DefaultCalibration(workload) or a fit to trials.
LayoutEvaluation PredictLayout(const ResolvedWorkload& resolved,
                               const Layout& layout,
                               const Calibration& calibration);

// The same for a workload not yet resolved (ResolveWorkload, then the
// above): an invalid workload or an unknown stack comes back with
// feasible = false and the reason. For one prediction; what predicts many
// layouts of a workload resolves it once.
LayoutEvaluation PredictLayout(const Workload& workload, const Layout& layout,
                               const Calibration& calibration);

}  // namespace tessera::costmodel
