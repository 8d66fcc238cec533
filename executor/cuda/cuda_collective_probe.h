// The CUDA side of `tessera-trial --probe-collectives`
// (executor/trial/collective_probe.h): this process takes GPU (rank %
// ranks_per_node) % devices, joins the NCCL world through the rendezvous
// file (rank 0 publishes the unique id), and runs the collective sweep on
// device buffers; the backend's synchronize after each call waits for the
// NCCL stream (the compute stream waits on its end event).
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "executor/trial/collective_probe.h"
#include "executor/trial/collective_sweep.h"

namespace tessera::executor {

// INVALID_ARGUMENT when there is no CUDA device; NCCL's, CUDA's or the
// sweep's error otherwise.
absl::StatusOr<std::vector<SweptCollective>> RunCudaCollectiveSweep(
    const CollectiveProbeConfig& config);

}  // namespace tessera::executor
