#include "costmodel/comm/fsdp_comm.h"

#include <algorithm>

#include "costmodel/comm/collectives.h"

namespace tessera::costmodel {

DataParallelTimes FsdpComm(const Layout& l, const LayoutPlacement& p,
                           const StageWork& w, const ClusterConfig& cl,
                           const TrainingStack& stack, const Calibration& c) {
  DataParallelTimes r;
  const double params = stack.comm_bytes.parameter_gather * w.params;
  const double grads = stack.comm_bytes.gradient_reduce * w.params;
  const double units = std::max(1.0, w.layers * c.fsdp_units_per_layer);
  const double scale = c.fsdp_bandwidth_efficiency;
  const double eta = c.fsdp_overlap_efficiency;
  const double gather_s =
      units * CollectiveTimeS(Collective::kAllGather, params / units, p.shard,
                              cl, c, scale);
  const double scatter_s =
      units * CollectiveTimeS(Collective::kReduceScatter, grads / units,
                              p.shard, cl, c, scale);
  // HSDP: replicas all-reduce their shard of the gradients once per step.
  const double shards = static_cast<double>(p.shard.ranks);
  const double replica_s =
      CollectiveTimeS(Collective::kAllReduce, grads / shards, p.replica, cl, c);
  r.per_step_s = replica_s;
  r.per_step = OverlappedComm(replica_s, w.backward_compute_s,
                              c.dp_overlap_efficiency, 0.0, c);

  // The first unit's collective, which nothing precedes, stays exposed.
  const auto hide = [&](double comm_s, double window_s) {
    return OverlappedComm(comm_s, window_s, eta, comm_s / units, c);
  };
  const bool once_per_step =
      l.zero == 3 && l.pp > 1 &&
      stack.fsdp.keeps_gathered_across_pipeline_micro_batches;
  if (once_per_step) {
    r.per_step_s += gather_s + scatter_s;
    r.per_step += hide(gather_s, w.forward_compute_s);
    r.per_step += hide(scatter_s, w.backward_compute_s);
    return r;
  }
  // A backward gather unless the parameters stayed gathered since the
  // forward (SHARD_GRAD_OP, reshard_after_forward=False).
  const bool regather = l.zero == 3 && stack.fsdp.reshard_after_forward;
  const double backward_s = (regather ? gather_s : 0) + scatter_s;
  r.per_micro_batch_s = gather_s + backward_s;
  r.per_micro_batch = hide(gather_s, w.forward_compute_s);
  r.per_micro_batch += hide(backward_s, w.backward_compute_s);
  return r;
}

}  // namespace tessera::costmodel
