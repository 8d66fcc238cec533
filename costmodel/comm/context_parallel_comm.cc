#include "costmodel/comm/context_parallel_comm.h"

#include "costmodel/comm/overlap.h"

namespace tessera::costmodel {

LayerCommTimes ContextParallelLayerComm(
    const ModelConfig& model, const LayerShard& shard, Recompute recompute,
    const GroupPlacement& g, const ClusterConfig& cl, const Calibration& c,
    double attention_forward_s, double attention_backward_s) {
  LayerCommTimes r;
  if (shard.cp <= 1) return r;
  // K and V of this rank's tokens and kv heads, bf16: 2 * 2*b*(s/cp)*kv_dim/tp.
  const double block_bytes =
      4 * shard.local_tokens() * model.kv_dim() / static_cast<double>(shard.tp);
  const double steps = static_cast<double>(shard.cp - 1);
  const double pass_s =
      steps * PointToPointTimeS(block_bytes, g.nodes > 1, cl, c);
  const bool recompute_attention = recompute != Recompute::kNone;
  r.forward_s = pass_s;
  // Backward rings K, V and dK, dV; recomputation repeats the forward ring
  // (full) — selective recomputes attention on blocks already received.
  r.backward_s = 2 * pass_s + (recompute == Recompute::kFull ? pass_s : 0);
  const double backward_window_s =
      attention_backward_s + (recompute_attention ? attention_forward_s : 0);
  const OverlapCost forward = OverlappedComm(
      r.forward_s, attention_forward_s, c.cp_overlap_efficiency, 0.0, c);
  const OverlapCost backward = OverlappedComm(
      r.backward_s, backward_window_s, c.cp_overlap_efficiency, 0.0, c);
  r.forward_exposed_s = forward.exposed_s;
  r.forward_slowdown_s = forward.slowdown_s;
  r.backward_exposed_s = backward.exposed_s;
  r.backward_slowdown_s = backward.slowdown_s;
  return r;
}

}  // namespace tessera::costmodel
