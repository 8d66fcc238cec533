// Data-parallel communication of one pipeline stage per optimizer step, by
// ZeRO stage (Rajbhandari et al. 2020) and HSDP (Zhao et al. 2023). Gradients
// travel in fp32 (4 B/param, the memory model's gradients; Llama 3 also
// reduce-scatters in fp32, Dubey et al. 2024), parameters in bf16 (2 B/param).
// The gradient group is dp*cp ranks; ZeRO shards over shard_group*cp ranks and
// HSDP replicates across dp/shard_group of them.
//
//   zero 0 (DDP): AllReduce of the gradients once per step, bucketed and
//     overlapped with the last micro-batch's backward:
//     exposed = max(0, comm - dp_overlap_efficiency * backward).
//   zero 1: ReduceScatter of the gradients (plus, with HSDP, an AllReduce of
//     the shard across replicas) after the last backward, AllGather of the
//     updated bf16 parameters before the next forward, each overlapped as
//     above with the backward / forward.
//   zero 2: as zero 1, but gradients are partitioned, so they are
//     reduce-scattered after every micro-batch's backward.
//   zero 3 (FSDP): per micro-batch, each unit's parameters are all-gathered in
//     forward and again in backward, and its gradients reduce-scattered; the
//     prefetch overlaps them with neighbouring units' compute, per pass:
//     exposed = max(0, comm - fsdp_overlap_efficiency * compute). A layer is
//     fsdp_units_per_layer units, each one collective per gather/scatter; the
//     collectives run at fsdp_bandwidth_efficiency of the bus bandwidth. HSDP
//     adds the replicas' AllReduce of the shard once per step.
//
//   DataParallelTimes t = DataParallelComm(layout, placement, work, cluster,
//   c);
#pragma once

#include <cstdint>

#include "core/layout.h"
#include "core/workload.h"
#include "planner/calibration.h"
#include "planner/rank_placement.h"

namespace tessera::planner {

// What the stage computes and holds, per GPU.
struct StageWork {
  double params = 0;              // parameters on this GPU (after tp, pp)
  double layers = 0;              // transformer layers on this GPU
  double forward_compute_s = 0;   // per micro-batch
  double backward_compute_s = 0;  // per micro-batch, recomputation included
};

struct DataParallelTimes {
  double per_micro_batch_s = 0;  // zero 2 / 3 traffic of each micro-batch
  double per_micro_batch_exposed_s = 0;  // of it, on the critical path
  double per_step_s = 0;                 // once per optimizer step
  double per_step_exposed_s = 0;
};

// `layout` resolved; `work` of the stage in question.
DataParallelTimes DataParallelComm(const Layout& layout,
                                   const LayoutPlacement& placement,
                                   const StageWork& work,
                                   const ClusterConfig& cluster,
                                   const Calibration& calibration);

}  // namespace tessera::planner
