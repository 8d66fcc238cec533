#include "costmodel/comm/data_parallel_comm.h"

#include <algorithm>

#include "costmodel/comm/collectives.h"
#include "costmodel/comm/fsdp_comm.h"

namespace tessera::costmodel {

DataParallelTimes DataParallelComm(const Layout& l, const LayoutPlacement& p,
                                   const StageWork& w, const ClusterConfig& cl,
                                   const TrainingStack& stack,
                                   const Calibration& c) {
  if (l.zero == 3 || (l.zero == 2 && !stack.fsdp.zero2_replicates_parameters)) {
    return FsdpComm(l, p, w, cl, stack, c);
  }
  DataParallelTimes r;
  const double grads = stack.comm_bytes.gradient_reduce * w.params;
  const double params = stack.comm_bytes.parameter_gather * w.params;
  const auto hide = [&](double comm_s, double window_s) {
    return OverlappedComm(comm_s, window_s, c.dp_overlap_efficiency, 0.0, c);
  };
  if (l.zero == 0) {
    r.per_step_s =
        CollectiveTimeS(Collective::kAllReduce, grads, p.data, cl, c);
    r.per_step = hide(r.per_step_s, w.backward_compute_s);
    return r;
  }
  // HSDP: replicas all-reduce their shard of the gradients once per step.
  const double shards = static_cast<double>(p.shard.ranks);
  const double replica_s =
      CollectiveTimeS(Collective::kAllReduce, grads / shards, p.replica, cl, c);
  r.per_step = hide(replica_s, w.backward_compute_s);
  // zero 1 and replicated-parameter zero 2.
  const double scatter_s =
      CollectiveTimeS(Collective::kReduceScatter, grads, p.shard, cl, c);
  const double gather_s =
      CollectiveTimeS(Collective::kAllGather, params, p.shard, cl, c);
  r.per_step_s = replica_s + gather_s;
  r.per_step += stack.fsdp.zero_gathers_parameters_in_optimizer_step
                    ? OverlapCost{.exposed_s = gather_s}
                    : hide(gather_s, w.forward_compute_s);
  if (l.zero == 1) {
    r.per_step_s += scatter_s;
    r.per_step += hide(scatter_s, w.backward_compute_s);
  } else {
    r.per_micro_batch_s = scatter_s;
    r.per_micro_batch = hide(scatter_s, w.backward_compute_s);
  }
  return r;
}

}  // namespace tessera::costmodel
