#include "planner/comm/collectives.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace tessera::planner {
namespace {

double IntraBytesPerS(const ClusterConfig& cl, const Calibration& c) {
  return cl.intra_node_gbs * 1e9 * c.intra_node_bw_efficiency;
}

// One GPU's share of its node's NICs.
double NicShareBytesPerS(const ClusterConfig& cl, const Calibration& c) {
  return cl.inter_node_gbs * 1e9 * c.inter_node_bw_efficiency /
         static_cast<double>(cl.gpus_per_node);
}

double StepLatencyS(bool inter_node, const ClusterConfig& cl,
                    const Calibration& c) {
  return (inter_node ? cl.inter_node_latency_us : cl.intra_node_latency_us) *
         1e-6 * c.ring_latency_factor;
}

}  // namespace

GroupPlacement PlaceGroup(int64_t ranks, int64_t stride,
                          int64_t gpus_per_node) {
  GroupPlacement g;
  g.ranks = std::max<int64_t>(ranks, 1);
  if (stride >= gpus_per_node) {
    g.ranks_per_node = 1;
  } else {
    g.ranks_per_node = std::clamp<int64_t>(
        gpus_per_node / std::max<int64_t>(stride, 1), 1, g.ranks);
  }
  g.nodes = (g.ranks + g.ranks_per_node - 1) / g.ranks_per_node;
  return g;
}

double BusBandwidthBytesPerS(const GroupPlacement& g, const ClusterConfig& cl,
                             const Calibration& c) {
  const double nvlink = IntraBytesPerS(cl, c);
  if (g.nodes <= 1) return nvlink;
  // Rail-optimized rings: g GPUs per node drive g NICs.
  return std::min(
      nvlink, static_cast<double>(g.ranks_per_node) * NicShareBytesPerS(cl, c));
}

namespace {

CollectiveOp OpOf(Collective kind) {
  switch (kind) {
    case Collective::kAllReduce:
      return CollectiveOp::kAllReduce;
    case Collective::kAllGather:
      return CollectiveOp::kAllGather;
    case Collective::kReduceScatter:
      break;
  }
  return CollectiveOp::kReduceScatter;
}

// The measured bus bandwidth of `op` for group `g`, bytes/s: the measured
// figure on the group's nodes, scaled by the modelled ratio of the group's
// placement to the measurement's (measured_collectives.h); nullopt when `op`
// was not measured.
std::optional<double> MeasuredBusBandwidth(CollectiveOp op, double bytes,
                                           const GroupPlacement& g,
                                           const ClusterConfig& cl,
                                           const Calibration& c) {
  if (c.collectives == nullptr) return std::nullopt;
  const std::optional<double> gbs =
      c.collectives->BusBandwidthGbs(op, bytes, g.nodes);
  if (!gbs.has_value()) return std::nullopt;
  const int64_t per_node = c.collectives->MeasuredGpusPerNode(op, g.nodes);
  GroupPlacement measured;
  measured.ranks_per_node = std::max<int64_t>(per_node, 1);
  measured.nodes = g.nodes;
  measured.ranks = measured.ranks_per_node * measured.nodes;
  return *gbs * 1e9 * BusBandwidthBytesPerS(g, cl, c) /
         BusBandwidthBytesPerS(measured, cl, c);
}

}  // namespace

double CollectiveTimeS(Collective kind, double bytes, const GroupPlacement& g,
                       const ClusterConfig& cl, const Calibration& c,
                       double bandwidth_scale) {
  if (g.ranks <= 1) return 0;
  const double n = static_cast<double>(g.ranks);
  const double factor =
      kind == Collective::kAllReduce ? 2 * (n - 1) / n : (n - 1) / n;
  // nccl-tests' busbw at this size already holds the latency: no alpha.
  if (const std::optional<double> measured =
          MeasuredBusBandwidth(OpOf(kind), bytes, g, cl, c)) {
    return factor * bytes / (*measured * bandwidth_scale);
  }
  const double busbw = BusBandwidthBytesPerS(g, cl, c) * bandwidth_scale;
  const double step_s = StepLatencyS(g.nodes > 1, cl, c);
  if (kind != Collective::kAllReduce) {
    // nccl-tests: AllGather/ReduceScatter busbw = S/t * (n-1)/n.
    return (n - 1) * step_s + (n - 1) / n * bytes / busbw;
  }
  // nccl-tests: AllReduce busbw = S/t * 2(n-1)/n.
  const double transfer_s = 2 * (n - 1) / n * bytes / busbw;
  const double ring_s = 2 * (n - 1) * step_s + transfer_s;
  const double tree_steps_inter =
      g.nodes > 1 ? std::ceil(std::log2(static_cast<double>(g.nodes))) : 0;
  const double tree_s = 2 * (tree_steps_inter * StepLatencyS(true, cl, c) +
                             static_cast<double>(g.ranks_per_node - 1) *
                                 StepLatencyS(false, cl, c)) +
                        transfer_s;
  return std::min(ring_s, tree_s);
}

double PointToPointTimeS(double bytes, bool crosses_nodes,
                         const ClusterConfig& cl, const Calibration& c) {
  if (c.collectives != nullptr) {
    // sendrecv_perf between two GPUs: on one node, or on two.
    if (const std::optional<double> gbs = c.collectives->BusBandwidthGbs(
            CollectiveOp::kSendRecv, bytes, crosses_nodes ? 2 : 1)) {
      return bytes / (*gbs * 1e9);
    }
  }
  const double nvlink = IntraBytesPerS(cl, c);
  const double bw =
      crosses_nodes ? std::min(nvlink, NicShareBytesPerS(cl, c)) : nvlink;
  return StepLatencyS(crosses_nodes, cl, c) + bytes / bw;
}

}  // namespace tessera::planner
