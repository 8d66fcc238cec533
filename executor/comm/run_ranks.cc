#include "executor/comm/run_ranks.h"

#include <memory>
#include <utility>

#include "executor/comm/internal/rank_threads.h"

namespace tessera::executor {

std::vector<absl::Status> RunRanks(int n, const RankFunction& fn,
                                   InProcessOptions options) {
  absl::StatusOr<std::unique_ptr<InProcessWorld>> world =
      InProcessWorld::Create(n, std::move(options));
  if (!world.ok()) return {world.status()};
  InProcessWorld& w = **world;
  return comm_internal::RunOnThreads(n, [&](int rank) {
    absl::Status status = fn(rank, w.communicator(rank));
    const absl::Status cause =
        comm_internal::AbortCause(rank, status, w.abort_status());
    if (!cause.ok()) w.Abort(cause);
    return status;
  });
}

absl::Status FirstFailure(const std::vector<absl::Status>& statuses) {
  for (const absl::Status& status : statuses) {
    if (!status.ok() && status.code() != absl::StatusCode::kAborted) {
      return status;
    }
  }
  for (const absl::Status& status : statuses) {
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace tessera::executor
