// What RunRanks and RunTcpRanks share: one thread per rank, and the rule by
// which a failing rank aborts its world so that the others stop waiting for
// it. A rank that returns ABORTED was itself aborted by another and is no
// new cause, unless nothing has aborted the world yet.
//
//   return RunOnThreads(n, [&](int rank) {
//     absl::Status status = fn(rank, world.communicator(rank));
//     absl::Status cause = AbortCause(rank, status, world.abort_status());
//     if (!cause.ok()) world.Abort(cause);
//     return status;
//   });
#pragma once

#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"

namespace tessera::executor::comm_internal {

// Runs rank_fn(r) on threads r = 0..n-1, all at once, and returns what each
// returned, by rank, once every thread has been joined.
std::vector<absl::Status> RunOnThreads(
    int n, absl::FunctionRef<absl::Status(int rank)> rank_fn);

// The cause with which a runner aborts the world after rank `rank` returned
// `status` while the world's abort status was `world_abort_status`: "rank
// <rank> failed: <status>" with status's code, or OK when there is nothing
// to abort for (status OK, or ABORTED after the world already aborted).
absl::Status AbortCause(int rank, const absl::Status& status,
                        const absl::Status& world_abort_status);

}  // namespace tessera::executor::comm_internal
