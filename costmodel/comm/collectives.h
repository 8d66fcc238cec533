// Time of one NCCL collective on a group of GPUs, in nccl-tests' conventions
// (NVIDIA nccl-tests, doc/PERFORMANCE.md): for n ranks and a buffer of S bytes
// (the AllReduce buffer, the AllGather output, the ReduceScatter input), the
// bus bandwidth busbw relates to the time t as
//   AllReduce                 t = 2(n-1)/n * S / busbw
//   AllGather, ReduceScatter  t =  (n-1)/n * S / busbw.
// Model: NCCL's own (nccl_tuning.h): for each algorithm (ring; tree for
// AllReduce; PAT for one rank per node) and protocol (LL, LL128, Simple)
//   t = latency(algorithm, protocol, ranks, ranks per node, nodes)
//       + bytes moved / (its share of the ring's bus bandwidth),
// and the fastest runs. Only the ring's hops between nodes pay the network's
// latency (nodes - 1 of the n - 1 steps), the tree's log2(nodes), PAT's
// log2(nodes) at 1/3.5 of the hop latency.
//   ring bus bandwidth: NVLink inside a node (intra_node_gbs per GPU). A
//     group spread over several nodes runs at the slower of NVLink and its
//     share of the node's NICs: with rail-optimized rings a group with g
//     GPUs in each node uses g of the node's gpus_per_node NICs,
//     g * inter_node_gbs / gpus_per_node.
// Bandwidth and latency efficiencies are calibration coefficients.
// Measured collectives (measured_collectives.h) replace the ring's bus
// bandwidth at every size they cover: the measured time at the size (or,
// outside the measured sizes, at the nearest one) with the model's latency
// for the measurement's placement taken out gives the bandwidth; the
// group's own latency is the model's, so a measurement at one size still
// prices small messages by their latency and large ones by the cluster's
// bandwidth, and ring_latency_factor stays something a fit can move.
//
//   GroupPlacement g = PlaceGroup(/*ranks=*/64, /*stride=*/8,
//   /*gpus_per_node=*/8); double t = CollectiveTimeS(Collective::kAllGather,
//   1e9, g, cluster, c);
#pragma once

#include <cstdint>

#include "core/workload.h"
#include "costmodel/calibration/calibration.h"

namespace tessera::costmodel {

enum class Collective { kAllReduce, kAllGather, kReduceScatter };

// Where a group's ranks sit.
struct GroupPlacement {
  int64_t ranks = 1;
  int64_t ranks_per_node = 1;  // the group's GPUs in each node it spans
  int64_t nodes = 1;           // nodes it spans
};

// A group of `ranks` ranks whose consecutive members are `stride` global ranks
// apart, with global ranks filling nodes of `gpus_per_node` in order. Groups
// are taken as aligned to node boundaries, which is exact when the group's
// span and gpus_per_node divide one another (power-of-two sizes).
GroupPlacement PlaceGroup(int64_t ranks, int64_t stride, int64_t gpus_per_node);

// NCCL bus bandwidth of the group, bytes/s.
double BusBandwidthBytesPerS(const GroupPlacement& group,
                             const ClusterConfig& cluster,
                             const Calibration& calibration);

// Seconds for one collective over `bytes` (nccl-tests' S). `bandwidth_scale`
// multiplies the bus bandwidth (FSDP's framework efficiency). 0 for one rank.
double CollectiveTimeS(Collective kind, double bytes,
                       const GroupPlacement& group,
                       const ClusterConfig& cluster,
                       const Calibration& calibration,
                       double bandwidth_scale = 1.0);

// Seconds for a point-to-point send of `bytes` from every GPU to a neighbour
// at the same time (pipeline stages, the context-parallel ring): one latency
// plus bytes over NVLink, or over the GPU's own NIC share
// (inter_node_gbs / gpus_per_node, capped by NVLink) when it crosses nodes.
double PointToPointTimeS(double bytes, bool crosses_nodes,
                         const ClusterConfig& cluster,
                         const Calibration& calibration);

}  // namespace tessera::costmodel
