// `tessera-trial --probe-collectives`: this process joins a world of one
// process per rank (ranks placed ranks_per_node to a node, the node being an
// agent) and runs the collective sweep (collective_sweep.h) on it: the TCP
// communicator over host memory on CPU, NCCL over device memory on CUDA
// (executor/cuda/cuda_collective_probe.h). Every rank returns the same
// figures; agents report rank 0's.
//
//   CollectiveProbeConfig c{.backend = "cpu", .rank = 1, .ranks = 4,
//                           .ranks_per_node = 2, .rendezvous_file = f};
//   nlohmann::json out = RunCollectiveProbe(c);  // SweepToJson or "error"
//
// This header is the probe's configuration, which each backend's sweep
// reads; RunCollectiveProbe, which picks the backend, is
// executor/tessera_trial/run_collective_probe.h.
#pragma once

#include <cstdint>
#include <string>

#include "executor/trial/collective_sweep.h"

namespace tessera::executor {

struct CollectiveProbeConfig {
  std::string backend = "cpu";
  int64_t rank = 0;            // this process's global rank
  int64_t ranks = 2;           // the world
  int64_t ranks_per_node = 1;  // ranks of one agent (divides ranks)
  std::string rendezvous_file;
  std::string bind_host = "127.0.0.1";
  std::string advertise_host;  // "": bind_host
  double time_limit_s = 0;  // bounds the rendezvous and every wait; 0: 10 min
  CollectiveSweepOptions sweep;
};


}  // namespace tessera::executor
