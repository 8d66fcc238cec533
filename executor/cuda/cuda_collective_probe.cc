#include "executor/cuda/cuda_collective_probe.h"

#include <cuda_runtime.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/trial_time_budget.h"
#include "executor/cuda/cuda_backend.h"
#include "executor/cuda/nccl_communicator.h"

namespace tessera::executor {

absl::StatusOr<std::vector<SweptCollective>> RunCudaCollectiveSweep(
    const CollectiveProbeConfig& c) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
    cudaGetLastError();
    return absl::InvalidArgumentError("no CUDA device was found");
  }
  const int device = static_cast<int>((c.rank % c.ranks_per_node) % count);
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<CudaBackend> backend,
                           CudaBackend::Create({.device = device}));
  NcclWorldOptions options;
  options.rendezvous_file = c.rendezvous_file;
  options.timeout = TrialCommTimeout(c.time_limit_s, options.timeout);
  TESSERA_ASSIGN_OR_RETURN(
      std::unique_ptr<NcclCommunicator> world,
      ConnectNcclWorld(static_cast<int>(c.rank), static_cast<int>(c.ranks),
                       device, backend->stream(), options));
  return SweepCollectives(*world, *backend, c.ranks_per_node, c.sweep);
}

}  // namespace tessera::executor
