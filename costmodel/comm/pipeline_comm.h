// Pipeline-parallel point-to-point traffic (Narayanan et al. SC'21, Section
// 4.1): per micro-batch and model chunk, a stage sends its output activations
// forward and receives their gradient backward, s*b*h bf16 values. With the
// scatter/gather optimization (or sequence parallelism) each tensor-parallel
// rank sends only its 1/tp share: 2*b*(s/cp)*h/tp bytes per GPU per send.
// Megatron-LM's sends block the schedule, so they are on the critical path.
//
//   double p2p_s = PipelineSendTimeS(model, shard, crosses_nodes, cluster, c);
#pragma once

#include "core/model.h"
#include "core/workload.h"
#include "costmodel/calibration/calibration.h"
#include "core/layer_shard.h"

namespace tessera::costmodel {

// One send of one micro-batch's boundary activations (or their gradient).
double PipelineSendTimeS(const ModelConfig& model, const LayerShard& shard,
                         bool crosses_nodes, const ClusterConfig& cluster,
                         const Calibration& calibration);

}  // namespace tessera::costmodel
