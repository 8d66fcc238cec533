#include "executor/trial/collective_probe.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "executor/comm/tcp_communicator.h"
#include "executor/cpu/cpu_backend.h"
#ifdef TESSERA_HAVE_CUDA
#include "executor/cuda/cuda_collective_probe.h"
#endif

namespace tessera::executor {
namespace {

nlohmann::json Error(absl::string_view what) {
  return {{"collectives", nlohmann::json::array()},
          {"error", std::string(what)}};
}

absl::Status CheckConfig(const CollectiveProbeConfig& c) {
  if (c.ranks < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--ranks: a collective probe needs at least 2 ranks, got ", c.ranks));
  }
  if (c.rank < 0 || c.rank >= c.ranks) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rank: ", c.rank, " is not in [0, ", c.ranks, ")"));
  }
  if (c.ranks_per_node < 1 || c.ranks % c.ranks_per_node != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--ranks-per-host: ", c.ranks_per_node,
                     " does not divide --ranks ", c.ranks));
  }
  if (c.rendezvous_file.empty()) {
    return absl::InvalidArgumentError("--rendezvous-file: required");
  }
  return absl::OkStatus();
}

nlohmann::json RunCpu(const CollectiveProbeConfig& c) {
  TcpWorldOptions options;
  options.rendezvous_file = c.rendezvous_file;
  options.bind_host = c.bind_host;
  options.advertise_host = c.advertise_host;
  if (c.time_limit_s > 0) options.timeout = absl::Seconds(c.time_limit_s);
  absl::StatusOr<std::unique_ptr<TcpCommunicator>> world = ConnectTcpWorld(
      static_cast<int>(c.rank), static_cast<int>(c.ranks), options);
  if (!world.ok()) {
    return Error(absl::StrCat("rendezvous: ", world.status().message()));
  }
  CpuBackend host;
  absl::StatusOr<std::vector<SweptCollective>> swept =
      SweepCollectives(**world, host, c.ranks_per_node, c.sweep);
  if (!swept.ok()) {
    // Tell the peers now rather than at their next wait.
    (*world)->Abort(swept.status());
    return Error(swept.status().message());
  }
  return SweepToJson(*swept);
}

}  // namespace

nlohmann::json RunCollectiveProbe(const CollectiveProbeConfig& c) {
  if (absl::Status s = CheckConfig(c); !s.ok()) return Error(s.message());
  if (c.backend == "cpu") return RunCpu(c);
  if (c.backend == "cuda") {
#ifdef TESSERA_HAVE_CUDA
    absl::StatusOr<std::vector<SweptCollective>> swept =
        RunCudaCollectiveSweep(c);
    if (!swept.ok()) return Error(swept.status().message());
    return SweepToJson(*swept);
#else
    return Error("--backend: 'cuda' is not part of this build");
#endif
  }
  return Error(
      absl::StrCat("--backend: unknown '", c.backend, "' (cpu or cuda)"));
}

}  // namespace tessera::executor
