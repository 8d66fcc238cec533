#include "costmodel/comm/nccl_tuning.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera::costmodel {
namespace {

constexpr NcclAlgorithm kAlgorithms[] = {NcclAlgorithm::kRing,
                                         NcclAlgorithm::kTree,
                                         NcclAlgorithm::kPat};
constexpr NcclProtocol kProtocols[] = {NcclProtocol::kLl, NcclProtocol::kLl128,
                                       NcclProtocol::kSimple};

// NCCL's latencies, us, by [algorithm ring/tree/PAT][protocol LL/LL128/
// Simple] (tuning.cc, ncclTunerConstantsDefaults: baseLatencies and
// hwLatencies for NVLink and NET).
constexpr double kBaseUs[3][3] = {{6.6, 14.0, 8.4}, {6.8, 14.0, 8.4},
                                  {8.0, 8.0, 8.0}};
constexpr double kNvlinkHopUs[3][3] = {{0.6, 1.9, 3.4}, {0.6, 1.25, 4.0},
                                       {0, 0, 4.0}};
constexpr double kNetHopUs[3][3] = {{2.7, 4.0, 14.0}, {5.0, 8.5, 14.0},
                                    {0, 0, 14.0}};
// PAT's per-rank part of its latency, us (tuning.cc: nRanks * 2.8).
constexpr double kPatPerRankUs = 2.8;
// The hop latencies NCCL's table is taken at: the GPU presets' figures
// (core/workload.cc MakeCluster: 1 us per NVLink step, 5 us per network
// step). A cluster with other figures scales NCCL's hops in proportion.
constexpr double kReferenceIntraNodeUs = 1.0;
constexpr double kReferenceInterNodeUs = 5.0;

int A(NcclAlgorithm a) { return static_cast<int>(a); }
int P(NcclProtocol p) { return static_cast<int>(p); }

double FloorLog2(int64_t n) {
  int bits = 0;
  while (n > 1) {
    n >>= 1;
    ++bits;
  }
  return bits;
}

// NCCL's LL bandwidth ceiling, bytes/s (tuning.cc llMaxBws: by architecture
// inside a node; across nodes by node count, Intel hosts).
double LlCeilingBytesPerS(const GroupPlacement& g, const ClusterConfig& cl) {
  if (g.nodes > 2) return 20.4e9;
  if (g.nodes == 2) return 39.0e9;
  const std::string& arch = cl.gpu.architecture;
  if (arch == "volta") return 39.0e9;
  if (arch == "ampere") return 87.7e9;
  if (arch == "blackwell") return 282.0e9;
  return 141.0e9;
}

// The fraction of the ring/Simple bus bandwidth (algorithm, protocol) reach,
// before the LL ceiling (tuning.cc's "model refinements").
double BandwidthFraction(NcclAlgorithm a, NcclProtocol p,
                         const GroupPlacement& g) {
  switch (a) {
    case NcclAlgorithm::kRing:
      return p == NcclProtocol::kLl ? 0.5
             : p == NcclProtocol::kLl128 ? 120.0 / 128 : 1.0;
    case NcclAlgorithm::kTree: {
      const double tree = 0.92;
      if (p == NcclProtocol::kLl) return tree / 3.8;
      if (p == NcclProtocol::kLl128) {
        return tree * (g.nodes == 1 ? 7.0 / 9 : 120.0 / 128);
      }
      return tree;
    }
    case NcclAlgorithm::kPat:
      break;
  }
  return 0.75;
}

// Bytes moved per byte of S at the bus bandwidth: nccl-tests' busbw
// factors for the ring; NCCL's algorithm-bandwidth ratios for the others
// (tree 1/2: 2 S; PAT none: S).
double BusBytesPerByte(Collective kind, NcclAlgorithm a, int64_t ranks) {
  const double n = static_cast<double>(ranks);
  if (a == NcclAlgorithm::kTree) return 2;
  if (a == NcclAlgorithm::kPat) return 1;
  return kind == Collective::kAllReduce ? 2 * (n - 1) / n : (n - 1) / n;
}

}  // namespace

bool NcclRuns(Collective kind, NcclAlgorithm a, NcclProtocol p,
              const GroupPlacement& g) {
  switch (a) {
    case NcclAlgorithm::kRing:
      return true;
    case NcclAlgorithm::kTree:
      return kind == Collective::kAllReduce;
    case NcclAlgorithm::kPat:
      break;
  }
  return kind != Collective::kAllReduce && p == NcclProtocol::kSimple &&
         g.ranks_per_node == 1 && g.nodes > 1;
}

double NcclLatencyS(Collective kind, NcclAlgorithm a, NcclProtocol p,
                    const GroupPlacement& g, const ClusterConfig& cl,
                    const Calibration& c) {
  // NCCL's hops, scaled by the cluster's figures over the reference ones.
  const double intra_us = kNvlinkHopUs[A(a)][P(p)] *
                          cl.intra_node_latency_us / kReferenceIntraNodeUs;
  // One rank per node: every network hop is exposed; NCCL charges the
  // tree's network latency (tuning.cc: "With ppn=1 ...").
  const int net_algorithm =
      g.ranks_per_node == 1 ? A(NcclAlgorithm::kTree) : A(a);
  const double net_us = kNetHopUs[net_algorithm][P(p)] *
                        cl.inter_node_latency_us / kReferenceInterNodeUs;
  const double n = static_cast<double>(g.ranks);
  const double nodes = static_cast<double>(g.nodes);
  double us = kBaseUs[A(a)][P(p)];
  switch (a) {
    case NcclAlgorithm::kRing: {
      const double all = kind == Collective::kAllReduce ? 2 * (n - 1) : n - 1;
      const double inter =
          g.nodes <= 1 ? 0
                       : (kind == Collective::kAllReduce ? 2 : 1) * (nodes - 1);
      us += (all - inter) * intra_us + inter * net_us;
      break;
    }
    case NcclAlgorithm::kTree:
      us += 2 * (static_cast<double>(g.ranks_per_node - 1) * intra_us +
                 FloorLog2(g.nodes) * net_us);
      break;
    case NcclAlgorithm::kPat:
      us += FloorLog2(g.nodes) * net_us / 3.5 + n * kPatPerRankUs;
      break;
  }
  return us * 1e-6 * c.ring_latency_factor;
}

double NcclTimeS(Collective kind, NcclAlgorithm a, NcclProtocol p,
                 double bytes, const GroupPlacement& g,
                 double ring_busbw_bytes_per_s, const ClusterConfig& cl,
                 const Calibration& c) {
  double busbw = ring_busbw_bytes_per_s * BandwidthFraction(a, p, g);
  if (p == NcclProtocol::kLl) busbw = std::min(busbw, LlCeilingBytesPerS(g, cl));
  return NcclLatencyS(kind, a, p, g, cl, c) +
         BusBytesPerByte(kind, a, g.ranks) * bytes / busbw;
}

NcclChoice FastestNcclAlgorithm(Collective kind, double bytes,
                                const GroupPlacement& g,
                                double ring_busbw_bytes_per_s,
                                const ClusterConfig& cl,
                                const Calibration& c) {
  // NcclTimeS for each (algorithm, protocol) NCCL runs, with the hop counts
  // and scales taken once (the search prices millions of collectives); the
  // same arithmetic as NcclLatencyS.
  const bool all_reduce = kind == Collective::kAllReduce;
  const double n = static_cast<double>(g.ranks);
  const double nodes = static_cast<double>(g.nodes);
  const double intra_scale = cl.intra_node_latency_us / kReferenceIntraNodeUs;
  const double net_scale = cl.inter_node_latency_us / kReferenceInterNodeUs;
  const bool one_per_node = g.ranks_per_node == 1;
  const double ring_all = all_reduce ? 2 * (n - 1) : n - 1;
  const double ring_inter =
      g.nodes <= 1 ? 0 : (all_reduce ? 2 : 1) * (nodes - 1);
  const double log2_nodes = FloorLog2(g.nodes);
  const double to_s = 1e-6 * c.ring_latency_factor;
  const double ll_ceiling = LlCeilingBytesPerS(g, cl);
  NcclChoice best;
  best.time_s = std::numeric_limits<double>::infinity();
  auto consider = [&](NcclAlgorithm a, NcclProtocol p, double bus_bytes,
                      double hops_us) {
    double busbw = ring_busbw_bytes_per_s * BandwidthFraction(a, p, g);
    if (p == NcclProtocol::kLl) busbw = std::min(busbw, ll_ceiling);
    const double latency_s = (kBaseUs[A(a)][P(p)] + hops_us) * to_s;
    const double t = latency_s + bus_bytes / busbw;
    if (t < best.time_s) best = NcclChoice{a, p, latency_s, t};
  };
  const double ring_bytes = (all_reduce ? 2 * (n - 1) / n : (n - 1) / n) * bytes;
  const int ring = A(NcclAlgorithm::kRing), tree = A(NcclAlgorithm::kTree);
  for (NcclProtocol p : kProtocols) {
    const int net_algorithm = one_per_node ? tree : ring;
    consider(NcclAlgorithm::kRing, p, ring_bytes,
             (ring_all - ring_inter) * kNvlinkHopUs[ring][P(p)] * intra_scale +
                 ring_inter * kNetHopUs[net_algorithm][P(p)] * net_scale);
    if (all_reduce) {
      consider(NcclAlgorithm::kTree, p, 2 * bytes,
               2 * (static_cast<double>(g.ranks_per_node - 1) *
                        kNvlinkHopUs[tree][P(p)] * intra_scale +
                    log2_nodes * kNetHopUs[tree][P(p)] * net_scale));
    }
  }
  if (NcclRuns(kind, NcclAlgorithm::kPat, NcclProtocol::kSimple, g)) {
    // One rank per node: the network hop is the tree's (NcclLatencyS).
    consider(NcclAlgorithm::kPat, NcclProtocol::kSimple, bytes,
             log2_nodes * kNetHopUs[tree][P(NcclProtocol::kSimple)] *
                     net_scale / 3.5 +
                 n * kPatPerRankUs);
  }
  return best;
}

double BandwidthBehindMeasuredTime(Collective kind, double bytes,
                                   double measured_s, const GroupPlacement& g,
                                   const ClusterConfig& cl,
                                   const Calibration& c) {
  // Each (algorithm, protocol) takes latency + k * S / (f * B); the fastest
  // reaches measured_s at the smallest B any of them needs for it, B = k S
  // / (f (measured - latency)) (LL only where its ceiling allows it).
  double busbw = std::numeric_limits<double>::infinity();
  for (NcclAlgorithm a : kAlgorithms) {
    for (NcclProtocol p : kProtocols) {
      if (!NcclRuns(kind, a, p, g)) continue;
      const double left_s = measured_s - NcclLatencyS(kind, a, p, g, cl, c);
      if (!(left_s > 0)) continue;
      const double bus_bytes = BusBytesPerByte(kind, a, g.ranks) * bytes;
      if (p == NcclProtocol::kLl &&
          bus_bytes / LlCeilingBytesPerS(g, cl) > left_s) {
        continue;
      }
      busbw = std::min(busbw, bus_bytes / (BandwidthFraction(a, p, g) * left_s));
    }
  }
  // At or below the model's latency: the measurement is all latency.
  return std::isfinite(busbw) ? busbw : 1e15;
}

}  // namespace tessera::costmodel
