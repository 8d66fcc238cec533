#include "executor/tessera_trial/run_collective_probe.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "executor/tessera_trial/executor_backends.h"

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

}  // namespace

nlohmann::json RunCollectiveProbe(const CollectiveProbeConfig& c) {
  if (absl::Status s = CheckConfig(c); !s.ok()) return Error(s.message());
  absl::StatusOr<const ExecutorBackend*> backend =
      FindExecutorBackend(c.backend, ExecutorCapability::kCollectiveSweep);
  if (!backend.ok()) {
    return Error(absl::StrCat("--backend: ", backend.status().message()));
  }
  absl::StatusOr<std::vector<SweptCollective>> swept =
      (*backend)->sweep_collectives(c);
  if (!swept.ok()) return Error(swept.status().message());
  return SweepToJson(*swept);
}

}  // namespace tessera::executor
