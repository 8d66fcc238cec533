#include "costmodel/comm/collectives.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "costmodel/comm/nccl_tuning.h"

namespace tessera::costmodel {
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

// nccl-tests' S / t over its bus bandwidth.
double NcclTestsFactor(Collective kind, int64_t ranks) {
  const double n = static_cast<double>(ranks);
  return kind == Collective::kAllReduce ? 2 * (n - 1) / n : (n - 1) / n;
}

// The ring/Simple bus bandwidth of group `g`, bytes/s, from the measured
// collective: at the size (clamped to the measured sizes), the measured time
// less the model's latency for the measurement's placement (the
// measurements' GPUs per node on the group's nodes) gives the bandwidth,
// scaled by the modelled ratio of the group's placement to the
// measurement's; nullopt when `kind` was not measured.
std::optional<double> MeasuredRingBusBandwidth(Collective kind, double bytes,
                                               const GroupPlacement& g,
                                               const ClusterConfig& cl,
                                               const Calibration& c) {
  if (c.collectives == nullptr) return std::nullopt;
  const CollectiveOp op = OpOf(kind);
  if (!c.collectives->Covers(op)) return std::nullopt;
  const auto [lo, hi] = c.collectives->MeasuredBytesRange(op);
  const double anchor = std::clamp(bytes, lo, hi);
  const std::optional<double> gbs =
      c.collectives->BusBandwidthGbs(op, anchor, g.nodes);
  if (!gbs.has_value()) return std::nullopt;
  GroupPlacement measured;
  measured.ranks_per_node =
      std::max<int64_t>(c.collectives->MeasuredGpusPerNode(op, g.nodes), 1);
  measured.nodes = g.nodes;
  measured.ranks = measured.ranks_per_node * measured.nodes;
  const double placement_ratio =
      BusBandwidthBytesPerS(g, cl, c) / BusBandwidthBytesPerS(measured, cl, c);
  if (measured.ranks <= 1) return *gbs * 1e9 * placement_ratio;
  const double measured_s =
      NcclTestsFactor(kind, measured.ranks) * anchor / (*gbs * 1e9);
  return BandwidthBehindMeasuredTime(kind, anchor, measured_s, measured, cl,
                                     c) *
         placement_ratio;
}

}  // namespace

double CollectiveTimeS(Collective kind, double bytes, const GroupPlacement& g,
                       const ClusterConfig& cl, const Calibration& c,
                       double bandwidth_scale) {
  if (g.ranks <= 1) return 0;
  const double ring_busbw =
      MeasuredRingBusBandwidth(kind, bytes, g, cl, c)
          .value_or(BusBandwidthBytesPerS(g, cl, c));
  return FastestNcclAlgorithm(kind, bytes, g, ring_busbw * bandwidth_scale,
                              cl, c)
      .time_s;
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

}  // namespace tessera::costmodel
