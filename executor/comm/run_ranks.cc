#include "executor/comm/run_ranks.h"

#include <memory>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tessera::executor {

std::vector<absl::Status> RunRanks(int n, const RankFunction& fn,
                                   InProcessOptions options) {
  absl::StatusOr<std::unique_ptr<InProcessWorld>> world =
      InProcessWorld::Create(n, std::move(options));
  if (!world.ok()) return {world.status()};
  std::vector<absl::Status> statuses(n);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] {
      InProcessWorld& w = **world;
      absl::Status status = fn(rank, w.communicator(rank));
      // A rank that returns ABORTED was itself aborted by another: it is
      // not a new cause (unless nothing aborted the world yet).
      if (!status.ok() && (status.code() != absl::StatusCode::kAborted ||
                           w.abort_status().ok())) {
        w.Abort(absl::Status(
            status.code(),
            absl::StrCat("rank ", rank, " failed: ", status.ToString())));
      }
      statuses[rank] = std::move(status);
    });
  }
  for (std::thread& thread : threads) thread.join();
  return statuses;
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
