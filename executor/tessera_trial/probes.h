// Probes: what an agent's hardware does, measured, for the planner to
// describe and calibrate against. A GEMM rate, and the bus bandwidth of each
// collective for the group sizes the host can form (nccl-tests conventions:
// AllReduce busbw = S/t * 2(n-1)/n; AllGather and ReduceScatter busbw =
// S/t * (n-1)/n, S the whole buffer).
//
//   std::vector<ProbeResult> probes = RunCpuProbes(/*ranks=*/8);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace tessera::executor {

struct ProbeResult {
  std::string kind;  // "gemm_f32", "allreduce", "allgather", "reducescatter",
                     // "memcpy"
  int64_t group_size = 1;
  int64_t bytes = 0;
  double value = 0;
  std::string unit;  // "TFLOP/s" (whole host) or "GB/s"
};

// The CPU backend's probes with up to `ranks` thread ranks: sgemm TFLOP/s of
// the whole host, in-process copy bandwidth, and the three collectives over
// the in-process communicator at group sizes 2, 4, ... up to ranks (and ranks
// itself), for 1 MiB and 16 MiB buffers.
std::vector<ProbeResult> RunCpuProbes(int ranks);

nlohmann::json ProbesToJson(const std::vector<ProbeResult>& probes);

}  // namespace tessera::executor
