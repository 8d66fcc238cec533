// Runs a function on n threads, one per rank of a fresh in-process world, and
// collects what each returned. The first rank to fail aborts the world, so
// the others return ABORTED promptly instead of waiting for it.
//
//   std::vector<absl::Status> statuses = RunRanks(
//       8, [&](int rank, Communicator& world) -> absl::Status {
//         return TrainStep(rank, world);
//       });
//   TESSERA_RETURN_IF_ERROR(FirstFailure(statuses));
#pragma once

#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "executor/comm/communicator.h"
#include "executor/comm/inproc_communicator.h"

namespace tessera::executor {

using RankFunction = std::function<absl::Status(int rank, Communicator&)>;

// Starts n threads with one InProcessWorld(n, options); thread r runs
// fn(r, world communicator r). Returns the n statuses by rank once every
// thread has been joined. A rank that fails aborts the world with "rank r
// failed: <its status>"; the ranks it leaves waiting return ABORTED with
// that message. n < 1 or bad options: one INVALID_ARGUMENT status.
std::vector<absl::Status> RunRanks(int n, const RankFunction& fn,
                                   InProcessOptions options = {});

// The failure that caused the others: the first non-OK status (by rank) that
// is not ABORTED, else the first non-OK one, else OK.
absl::Status FirstFailure(const std::vector<absl::Status>& statuses);

}  // namespace tessera::executor
