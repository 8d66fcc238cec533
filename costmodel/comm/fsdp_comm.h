// FSDP / ZeRO-3 communication of one pipeline stage (Rajbhandari et al. 2020;
// Zhao et al. 2023, PyTorch FSDP), and FSDP's SHARD_GRAD_OP (ZeRO-2 with
// sharded parameters), under the training stack's FSDP policy.
//
// The stage's parameters are fsdp_units_per_layer units per layer (FSDP and
// FSDP2 wrap each block: 1; DeepSpeed ZeRO-3 fetches module by module); each
// unit is one AllGather of its parameters (the stack's parameter_gather
// bytes each: bf16, or fp8 gathers) and one ReduceScatter of its gradients
// (gradient_reduce bytes: fp32 or bf16) over the shard group, at
// fsdp_bandwidth_efficiency of the group's bus bandwidth. Per micro-batch:
//   forward   AllGather of every unit
//   backward  AllGather again when parameters were resharded after the
//             forward (FULL_SHARD), then ReduceScatter of every unit;
// with pipeline parallelism and a stack that keeps parameters gathered across
// the micro-batches (torchtitan), one AllGather and one ReduceScatter per
// step instead. Prefetching hides them behind the neighbouring units'
// compute of the same pass, except the first unit's gather:
//   exposed = max(one unit's comm, comm - fsdp_overlap_efficiency * compute).
// and the hidden rest slows that compute (overlap.h: each OverlapCost's
// slowdown_s).
// HSDP adds the replicas' AllReduce of the gradient shard once per step.
//
//   DataParallelTimes t = FsdpComm(layout, placement, work, cluster, stack, c);
#pragma once

#include "core/layout.h"
#include "core/workload.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/comm/data_parallel_comm.h"
#include "costmodel/comm/rank_placement.h"
#include "costmodel/stacks/training_stack.h"

namespace tessera::costmodel {

// `layout` resolved, with zero 3 or a stack whose ZeRO-2 shards parameters.
DataParallelTimes FsdpComm(const Layout& layout,
                           const LayoutPlacement& placement,
                           const StageWork& work, const ClusterConfig& cluster,
                           const TrainingStack& stack,
                           const Calibration& calibration);

}  // namespace tessera::costmodel
