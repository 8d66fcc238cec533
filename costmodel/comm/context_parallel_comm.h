// Context-parallel communication (ring attention: Liu et al. 2023; Megatron-LM
// context parallelism): each of the cp ranks holds s/cp tokens; in forward
// the K and V blocks of this rank's kv heads (2 * 2*b*(s/cp)*kv_dim/tp bytes)
// travel round the ring in cp - 1 point-to-point steps; backward sends K, V and
// their gradients (twice the steps); full recomputation repeats the forward's.
// The exchange overlaps with block attention: exposed = max(0, comm -
// cp_overlap_efficiency * attention time of the same pass), and the hidden
// rest slows that attention (overlap.h; the *_slowdown_s times).
//
//   LayerCommTimes cp = ContextParallelLayerComm(model, shard, recompute,
//       placement.cp, cluster, c, attention_forward_s, attention_backward_s);
#pragma once

#include "core/layout.h"
#include "core/model.h"
#include "core/workload.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/comm/collectives.h"
#include "costmodel/comm/layer_comm.h"
#include "core/layer_shard.h"

namespace tessera::costmodel {

// `attention_forward_s` and `attention_backward_s`: the attention core's
// forward and backward times for this shard (compute_time.h); recomputation
// adds the forward's to the backward's window.
LayerCommTimes ContextParallelLayerComm(
    const ModelConfig& model, const LayerShard& shard, Recompute recompute,
    const GroupPlacement& cp_group, const ClusterConfig& cluster,
    const Calibration& calibration, double attention_forward_s,
    double attention_backward_s);

}  // namespace tessera::costmodel
