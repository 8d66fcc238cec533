// What every rank of a group must pass alike to a collective, how errors
// describe a call, and the check that the ranks agree, shared by the
// in-process rendezvous and TcpCommunicator so that both word a mismatch the
// same way: "AllReduce #0 (f32 x 4, sum) on group world: rank 3 passed count
// 5 but rank 0 passed 4". Every rank runs the check on every rank's call, in
// rank order, so all of them return the same verdict.
//
//   CallSignature mine;
//   mine.kind = CollectiveKind::kAllReduce;
//   mine.dtype = send.dtype;
//   mine.count = send.numel;
//   mine.local = CheckAllReduce(send, recv);
//   ... every rank's signature at hand ...
//   TESSERA_RETURN_IF_ERROR(CheckCallsAgree(
//       size, [&](int r) -> const CallSignature& { return calls[r]; }, seq,
//       group_name, [&](int r) { return RankName(r); }));
#pragma once

#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "executor/comm/communicator.h"
#include "executor/tensor.h"

namespace tessera::executor::comm_internal {

enum class CollectiveKind {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kBarrier,
  kSplit,
};
// "AllReduce", "AllGather", ... as the Communicator method is called.
absl::string_view CollectiveName(CollectiveKind kind);

// What one rank passed to one collective, as far as the others must agree.
struct CallSignature {
  CollectiveKind kind = CollectiveKind::kBarrier;
  // Data collectives: the dtype and the count every rank must agree on
  // (AllReduce, Broadcast: numel; AllGather: send; ReduceScatter: recv).
  DType dtype = DType::kF32;
  int64_t count = 0;
  ReduceOp op = ReduceOp::kSum;  // AllReduce, ReduceScatter
  int root = 0;                  // Broadcast
  // This rank's own argument error (argument_checks.h), reported on every
  // rank.
  absl::Status local;
};

// "AllReduce #3 (f32 x 1000, sum) on group world", "Broadcast #0 (bf16 x 7,
// root 2) on group world/split#1:color=0", "Barrier #4 on group world".
std::string DescribeCall(const CallSignature& call, uint64_t seq,
                         absl::string_view group_name);

// Names group rank r in errors: "rank 2", or "rank 2 (world rank 5)".
using RankNamer = absl::FunctionRef<std::string(int rank)>;
// Group rank r's signature.
using CallOf = absl::FunctionRef<const CallSignature&(int rank)>;

// Checks the calls of ranks 0..size-1 of collective `seq` against rank 0's,
// in rank order, and returns OK or INVALID_ARGUMENT for the first rank that
// brought a local error ("<its call>: rank 1: recv.numel 1 != send.numel
// 2"), called another collective ("...: rank 1 called Barrier instead
// (collectives must be called in the same order)"), or passed another dtype,
// count, op (reductions) or root (Broadcast) ("...: rank 2 passed root 1 but
// rank 0 passed 0").
absl::Status CheckCallsAgree(int size, CallOf call_of, uint64_t seq,
                             absl::string_view group_name, RankNamer name_rank);

}  // namespace tessera::executor::comm_internal
