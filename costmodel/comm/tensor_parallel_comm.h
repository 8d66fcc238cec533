// Tensor-parallel communication (Megatron-LM; Shoeybi et al. 2019, Korthikanti
// et al. 2022): per layer and micro-batch, the s*b*h bf16 activations
// (2*b*(s/cp)*h bytes) go through an AllReduce after the attention block and
// after the MLP in forward, and two more in backward; with sequence
// parallelism each AllReduce becomes an AllGather plus a ReduceScatter of the
// same buffer (the same bandwidth, Korthikanti et al. 2022, Section 4.2.2).
// Full recomputation repeats the forward's two. The collectives block the
// GEMMs that need them; tp_overlap_efficiency hides a fraction.
//
//   LayerCommTimes tp = TensorParallelLayerComm(model, shard, recompute,
//                                               placement.tp, cluster, c);
#pragma once

#include "core/layout.h"
#include "core/model.h"
#include "core/workload.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/comm/collectives.h"
#include "costmodel/comm/layer_comm.h"
#include "core/layer_shard.h"

namespace tessera::costmodel {

LayerCommTimes TensorParallelLayerComm(const ModelConfig& model,
                                       const LayerShard& shard,
                                       Recompute recompute,
                                       const GroupPlacement& tp_group,
                                       const ClusterConfig& cluster,
                                       const Calibration& calibration);

}  // namespace tessera::costmodel
