#include "executor/comm/internal/rank_threads.h"

#include <thread>

#include "absl/strings/str_cat.h"

namespace tessera::executor::comm_internal {

std::vector<absl::Status> RunOnThreads(
    int n, absl::FunctionRef<absl::Status(int rank)> rank_fn) {
  std::vector<absl::Status> statuses(n);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] { statuses[rank] = rank_fn(rank); });
  }
  for (std::thread& thread : threads) thread.join();
  return statuses;
}

absl::Status AbortCause(int rank, const absl::Status& status,
                        const absl::Status& world_abort_status) {
  if (status.ok() || (status.code() == absl::StatusCode::kAborted &&
                      !world_abort_status.ok())) {
    return absl::OkStatus();
  }
  return absl::Status(
      status.code(),
      absl::StrCat("rank ", rank, " failed: ", status.ToString()));
}

}  // namespace tessera::executor::comm_internal
