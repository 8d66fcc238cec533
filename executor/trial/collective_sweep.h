// The cluster's collective sweep: what nccl-tests' all_gather_perf,
// reduce_scatter_perf, all_reduce_perf and sendrecv_perf measure, run by
// every rank of a world (one process per rank across agents: the TCP
// communicator on CPU, NCCL on GPUs) over a range of message sizes. Agents
// run it through `tessera-trial --probe-collectives` when the planner asks
// for a cluster probe (service/cluster_probe.h); the planner stores
// the figures with the cluster and the cost model reads them as it reads a
// user's nccl-tests output (costmodel/calibration/measured_collectives.h).
//
// Conventions are nccl-tests' (its doc/PERFORMANCE.md): `bytes` is the whole
// buffer (the AllGather output, the ReduceScatter input, the AllReduce
// buffer, the SendRecv message), algbw = bytes / t, and
//   AllReduce      busbw = algbw * 2(n-1)/n
//   AllGather      busbw = algbw * (n-1)/n
//   ReduceScatter  busbw = algbw * (n-1)/n
//   SendRecv       busbw = algbw  (each rank sends to rank+1, receives from
//                                  rank-1)
// with t the slowest rank's time (every rank's best over the timed
// iterations, then the maximum over ranks, so every rank reports the same
// figures).
//
//   CpuBackend host;
//   TESSERA_ASSIGN_OR_RETURN(std::vector<SweptCollective> swept,
//       SweepCollectives(world, host, /*ranks_per_node=*/2, {}));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "executor/backend.h"
#include "executor/comm/communicator.h"
#include "nlohmann/json.hpp"

namespace tessera::executor {

// The collectives swept, by their measured_collectives.h names.
inline constexpr const char* kSweptCollectives[] = {
    "all_gather", "reduce_scatter", "all_reduce", "sendrecv"};

struct CollectiveSweepOptions {
  int64_t min_bytes = int64_t{64} << 10;  // first size (rounded, see below)
  int64_t max_bytes = int64_t{16} << 20;  // last size
  int64_t size_factor = 4;                // sizes grow by this factor
  int warmup_iterations = 1;
  int timed_iterations = 3;
};

// One measured point: the collective, the world's node count and ranks per
// node, the buffer size and the bus bandwidth.
struct SweptCollective {
  std::string collective;  // kSweptCollectives
  int64_t nodes = 1;
  int64_t gpus_per_node = 1;
  int64_t bytes = 0;
  double seconds = 0;  // the slowest rank's best time
  double busbw_gbs = 0;
};

// The bus bandwidth, GB/s, of `collective` moving `bytes` in `seconds` on
// `ranks` ranks (the conventions above). INVALID_ARGUMENT for an unknown
// collective, ranks < 2 or a time that is not positive.
absl::StatusOr<double> BusBandwidthGbs(const std::string& collective,
                                       int64_t bytes, double seconds,
                                       int64_t ranks);

// Runs the sweep on every rank of `world` (a collective call: every rank
// must call it with the same arguments), with buffers from `backend`. The
// world's ranks are placed `ranks_per_node` to a node (world.size() must be
// a multiple). Sizes go min_bytes, min_bytes * size_factor, ... up to
// max_bytes, each rounded down to a whole number of 4-byte elements per
// rank. INVALID_ARGUMENT for a world of one rank or bad options; the
// communicator's or backend's error otherwise.
absl::StatusOr<std::vector<SweptCollective>> SweepCollectives(
    Communicator& world, Backend& backend, int64_t ranks_per_node,
    const CollectiveSweepOptions& options);

// {"collectives": [{"collective", "nodes", "gpus_per_node", "bytes",
// "seconds", "busbw_gbs"}, ...]}, what tessera-trial --probe-collectives
// writes (with "error" instead when the sweep failed).
nlohmann::json SweepToJson(const std::vector<SweptCollective>& swept);

}  // namespace tessera::executor
