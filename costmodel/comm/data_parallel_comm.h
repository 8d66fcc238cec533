// Data-parallel communication of one pipeline stage per optimizer step, by
// ZeRO stage (Rajbhandari et al. 2020) and HSDP (Zhao et al. 2023), with
// replicated parameters: DDP, ZeRO-1 (Megatron's distributed optimizer) and
// DeepSpeed's ZeRO-2. FSDP / ZeRO-3, and ZeRO-2 where the stack shards
// parameters too (FSDP SHARD_GRAD_OP), are fsdp_comm.h's. Gradients travel in
// the stack's gradient_reduce bytes (fp32: 4 B/param; Llama 3 also
// reduce-scatters in fp32, Dubey et al. 2024), parameters in its
// parameter_gather bytes (bf16: 2 B/param). The gradient group is dp*cp
// ranks; ZeRO shards over shard_group*cp ranks and HSDP replicates across
// dp/shard_group of them.
//
//   zero 0 (DDP): AllReduce of the gradients once per step, bucketed and
//     overlapped with the last micro-batch's backward:
//     exposed = max(0, comm - dp_overlap_efficiency * backward).
//     The hidden rest slows that backward (overlap.h): the OverlapCosts'
//     slowdown_s, compute rather than communication.
//   zero 1: ReduceScatter of the gradients (plus, with HSDP, an AllReduce of
//     the shard across replicas) after the last backward, AllGather of the
//     updated bf16 parameters before the next forward, each overlapped as
//     above with the backward / forward; where the stack gathers inside the
//     optimizer step (FsdpPolicy::zero_gathers_parameters_in_optimizer_step:
//     nanotron, DeepSpeed, PyTorch's ZeroRedundancyOptimizer, Tessera's
//     executor) the AllGather is all exposed.
//   zero 2: as zero 1, but gradients are partitioned, so they are
//     reduce-scattered after every micro-batch's backward.
//   zero 3 and sharded zero 2: FsdpComm (fsdp_comm.h).
//
//   DataParallelTimes t = DataParallelComm(layout, placement, work, cluster,
//   c);
#pragma once

#include <cstdint>

#include "core/layout.h"
#include "core/workload.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/comm/overlap.h"
#include "costmodel/comm/rank_placement.h"
#include "costmodel/stacks/training_stack.h"

namespace tessera::costmodel {

// What the stage computes and holds, per GPU.
struct StageWork {
  double params = 0;              // parameters on this GPU (after tp, pp)
  double layers = 0;              // transformer layers on this GPU
  double forward_compute_s = 0;   // per micro-batch
  double backward_compute_s = 0;  // per micro-batch, recomputation included
};

struct DataParallelTimes {
  double per_micro_batch_s = 0;  // zero 2 / 3 traffic of each micro-batch
  // Of it, what is on the critical path and what the hidden rest adds to
  // the micro-batch's compute (overlap.h).
  OverlapCost per_micro_batch;
  double per_step_s = 0;  // once per optimizer step
  OverlapCost per_step;
};

// `layout` resolved; `work` of the stage in question.
DataParallelTimes DataParallelComm(const Layout& layout,
                                   const LayoutPlacement& placement,
                                   const StageWork& work,
                                   const ClusterConfig& cluster,
                                   const TrainingStack& stack,
                                   const Calibration& calibration);

}  // namespace tessera::costmodel
