// Runs a function on n threads of this process, each its own rank of a fresh
// TCP world over loopback: the multi-process communicator exercised (and
// benchmarked) in one process, as RunRanks does for the in-process world.
// Every rank has its own connections, reader threads and rendezvous, exactly
// as separate processes would. The first rank to fail aborts the world
// through TcpCommunicator::Abort, so the others return ABORTED promptly.
//
//   std::vector<absl::Status> statuses = RunTcpRanks(
//       4, [&](int rank, Communicator& world) -> absl::Status {
//         return world.AllReduce(grad, grad, ReduceOp::kSum);
//       });
//   TESSERA_RETURN_IF_ERROR(FirstFailure(statuses));
#pragma once

#include <vector>

#include "absl/status/status.h"
#include "executor/comm/run_ranks.h"
#include "executor/comm/tcp_communicator.h"

namespace tessera::executor {

// Starts n threads; thread r connects as rank r of a world of n (options as
// given; an empty rendezvous_file means a fresh one in a temporary folder,
// removed afterwards) and runs fn(r, its world communicator). Returns the n
// statuses by rank once every thread has been joined (a rank that could not
// connect returns that error). A rank that fails aborts the world with "rank
// r failed: <its status>". n < 1 or bad options: one INVALID_ARGUMENT
// status.
std::vector<absl::Status> RunTcpRanks(int n, const RankFunction& fn,
                                      TcpWorldOptions options = {});

}  // namespace tessera::executor
