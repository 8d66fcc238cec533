#include "planner/data_parallel_comm.h"

#include <algorithm>

#include "planner/collectives.h"

namespace tessera::planner {
namespace {

// fp32 gradients, bf16 parameters.
constexpr double kGradBytes = 4;
constexpr double kParamBytes = 2;

// The part of `comm_s` that `efficiency` of the compute window does not hide.
double Exposed(double comm_s, double window_s, double efficiency) {
  return std::max(0.0, comm_s - efficiency * window_s);
}

}  // namespace

DataParallelTimes DataParallelComm(const Layout& l, const LayoutPlacement& p,
                                   const StageWork& w, const ClusterConfig& cl,
                                   const Calibration& c) {
  DataParallelTimes r;
  const double grads = kGradBytes * w.params;
  const double params = kParamBytes * w.params;
  const double e = c.dp_overlap_efficiency;
  if (l.zero == 0) {
    r.per_step_s =
        CollectiveTimeS(Collective::kAllReduce, grads, p.data, cl, c);
    r.per_step_exposed_s = Exposed(r.per_step_s, w.backward_compute_s, e);
    return r;
  }
  // HSDP: replicas all-reduce their shard of the gradients once per step.
  const double shards = static_cast<double>(p.shard.ranks);
  const double replica_s =
      CollectiveTimeS(Collective::kAllReduce, grads / shards, p.replica, cl, c);
  r.per_step_s = replica_s;
  r.per_step_exposed_s = Exposed(replica_s, w.backward_compute_s, e);
  if (l.zero <= 2) {
    const double scatter_s =
        CollectiveTimeS(Collective::kReduceScatter, grads, p.shard, cl, c);
    const double gather_s =
        CollectiveTimeS(Collective::kAllGather, params, p.shard, cl, c);
    r.per_step_s += gather_s;
    r.per_step_exposed_s += Exposed(gather_s, w.forward_compute_s, e);
    if (l.zero == 1) {
      r.per_step_s += scatter_s;
      r.per_step_exposed_s += Exposed(scatter_s, w.backward_compute_s, e);
    } else {
      r.per_micro_batch_s = scatter_s;
      r.per_micro_batch_exposed_s = Exposed(scatter_s, w.backward_compute_s, e);
    }
    return r;
  }
  // FSDP: one collective per unit; the bus bandwidth scaled by the framework.
  const double units = std::max(1.0, w.layers * c.fsdp_units_per_layer);
  const double scale = c.fsdp_bandwidth_efficiency;
  const double gather_s =
      units * CollectiveTimeS(Collective::kAllGather, params / units, p.shard,
                              cl, c, scale);
  const double scatter_s =
      units * CollectiveTimeS(Collective::kReduceScatter, grads / units,
                              p.shard, cl, c, scale);
  const double eta = c.fsdp_overlap_efficiency;
  r.per_micro_batch_s = 2 * gather_s + scatter_s;
  r.per_micro_batch_exposed_s =
      Exposed(gather_s, w.forward_compute_s, eta) +
      Exposed(gather_s + scatter_s, w.backward_compute_s, eta);
  return r;
}

}  // namespace tessera::planner
