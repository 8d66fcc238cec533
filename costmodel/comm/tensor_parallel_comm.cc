#include "costmodel/comm/tensor_parallel_comm.h"

namespace tessera::costmodel {

LayerCommTimes TensorParallelLayerComm(
    const ModelConfig& model, const LayerShard& shard, Recompute recompute,
    const GroupPlacement& g, const ClusterConfig& cl, const Calibration& c) {
  LayerCommTimes r;
  if (shard.tp <= 1) return r;
  // 2*b*s*h bytes: the layer's bf16 activations (Korthikanti et al. 2022).
  const double bytes = 2 * shard.local_tokens() * model.hidden;
  const double exchange_s =
      shard.sp
          ? CollectiveTimeS(Collective::kAllGather, bytes, g, cl, c) +
                CollectiveTimeS(Collective::kReduceScatter, bytes, g, cl, c)
          : CollectiveTimeS(Collective::kAllReduce, bytes, g, cl, c);
  const double recompute_exchanges = recompute == Recompute::kFull ? 2 : 0;
  r.forward_s = 2 * exchange_s;
  r.backward_s = (2 + recompute_exchanges) * exchange_s;
  r.forward_exposed_s = (1 - c.tp_overlap_efficiency) * r.forward_s;
  r.backward_exposed_s = (1 - c.tp_overlap_efficiency) * r.backward_s;
  return r;
}

}  // namespace tessera::costmodel
