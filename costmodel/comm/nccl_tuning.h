// NCCL's algorithms and protocols, and the one it runs for a collective: the
// structure of NCCL's own tuning model (NVIDIA/nccl src/graph/tuning.cc,
// ncclTopoTuneModel and ncclTopoGetAlgoTime, 2.2x), which predicts for every
// (algorithm, protocol) a latency and a bandwidth and runs the fastest:
//   time = latency + bytes / algorithm bandwidth.
//
// Algorithms (NVLS and CollNet, which need NVLink SHARP or an IB SHARP
// plugin, are left to measured collectives, which hold them when the cluster
// runs them):
//   ring   every collective; n-1 steps (AllGather, ReduceScatter) or
//          2(n-1) (AllReduce), of which only the steps between nodes pay the
//          network's latency: nodes-1 (2(nodes-1) for AllReduce) per ring;
//          bus bandwidth as nccl-tests reports it.
//   tree   AllReduce only: NCCL's double binary tree between nodes, a chain
//          inside each: 2 * ((ranks per node - 1) intra-node hops +
//          floor(log2 nodes) network hops); 0.92 of the ring's bus bandwidth,
//          moving 2S (NCCL converts its bus bandwidth with ratio 1/2).
//   PAT    AllGather and ReduceScatter with one rank per node (NCCL 2.23+):
//          floor(log2 nodes) network hops at 1/3.5 of their latency plus
//          2.8 us per rank; 0.75 of the bus bandwidth, moving S.
// Protocols, by what a byte costs and what a hop costs:
//   Simple  the full bus bandwidth, the highest per-hop latency;
//   LL128   120 of 128 bytes payload: 0.94 of it, about half the latency;
//   LL      8-byte flags: half of it (a tree a quarter), capped at NCCL's
//           LL ceiling (Hopper 141 GB/s in a node; 39 GB/s on 2 nodes, 20.4
//           beyond), the lowest latency.
// Latencies: NCCL's base latency per (algorithm, protocol) (6.6-14 us: the
// kernel and its first chunk) plus its per-hop latencies, NVLink or network,
// by (algorithm, protocol) (the ring's Simple hop: 3.4 us on NVLink, 14 us
// on the network). NCCL's table is taken at the GPU presets' figures (1 us
// intra_node_latency_us, 5 us inter_node_latency_us); a cluster with other
// figures scales its hops in proportion. ring_latency_factor scales the
// whole latency. With one rank per node every network hop is exposed: NCCL
// then charges the tree's network latency to every algorithm.
//
//   NcclChoice best = FastestNcclAlgorithm(Collective::kAllGather, 64e6,
//                                          group, ring_busbw, cluster, c);
#pragma once

#include "core/workload.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/comm/collectives.h"

namespace tessera::costmodel {

enum class NcclAlgorithm { kRing, kTree, kPat };
enum class NcclProtocol { kLl, kLl128, kSimple };

// One (algorithm, protocol) and what it costs.
struct NcclChoice {
  NcclAlgorithm algorithm = NcclAlgorithm::kRing;
  NcclProtocol protocol = NcclProtocol::kSimple;
  double latency_s = 0;
  double time_s = 0;
};

// Whether NCCL runs `algorithm` for `kind` on group `g`.
bool NcclRuns(Collective kind, NcclAlgorithm algorithm, NcclProtocol protocol,
              const GroupPlacement& g);

// The latency of one collective of `kind` on `g` with `algorithm` and
// `protocol`, seconds (see above).
double NcclLatencyS(Collective kind, NcclAlgorithm algorithm,
                    NcclProtocol protocol, const GroupPlacement& g,
                    const ClusterConfig& cluster,
                    const Calibration& calibration);

// Seconds `algorithm` and `protocol` take for `bytes` (nccl-tests' S) when
// the ring with Simple reaches `ring_busbw_bytes_per_s` of bus bandwidth.
double NcclTimeS(Collective kind, NcclAlgorithm algorithm,
                 NcclProtocol protocol, double bytes, const GroupPlacement& g,
                 double ring_busbw_bytes_per_s, const ClusterConfig& cluster,
                 const Calibration& calibration);

// The fastest (algorithm, protocol) NCCL runs for `kind` over `bytes` on a
// group of two or more ranks.
NcclChoice FastestNcclAlgorithm(Collective kind, double bytes,
                                const GroupPlacement& g,
                                double ring_busbw_bytes_per_s,
                                const ClusterConfig& cluster,
                                const Calibration& calibration);

// The ring/Simple bus bandwidth at which the fastest algorithm and protocol
// for `kind` on `g` take `measured_s` for `bytes`: a measured time with the
// model's latency taken out, so that the measurement fixes the bandwidth and
// the model's latencies carry it to other sizes. Very large when the
// measurement is at or below the model's latency.
double BandwidthBehindMeasuredTime(Collective kind, double bytes,
                                   double measured_s, const GroupPlacement& g,
                                   const ClusterConfig& cluster,
                                   const Calibration& calibration);

}  // namespace tessera::costmodel
