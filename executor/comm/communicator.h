// Collective and point-to-point communication among the ranks of a group, as
// NCCL offers it. Implementations: InProcessCommunicator (ranks are threads of
// one process; inproc_communicator.h) and NcclCommunicator (one process per
// GPU; executor/cuda/). The parallel engine splits the world into its tp, pp,
// dp and cp groups with Split().
//
// Every call is collective over the group (all ranks call it, in the same
// order) except Send/Recv, which pair one rank with one peer. Buffers are
// backend memory of the dtype of their Tensor; send and recv may alias for
// AllReduce (in place). Errors: INVALID_ARGUMENT for mismatched sizes or
// dtypes, ABORTED when another rank failed, DEADLINE_EXCEEDED when a peer did
// not arrive within the group's timeout (a deadlock would otherwise hang).
//
//   TESSERA_RETURN_IF_ERROR(tp->AllReduce(partial, partial, ReduceOp::kSum));
//   TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> row,
//                            world->Split(/*color=*/rank / 4, /*key=*/rank));
#pragma once

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "executor/tensor.h"

namespace tessera::executor {

enum class ReduceOp { kSum, kMax };

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;  // 0..size()-1 within this group
  virtual int size() const = 0;

  // recv[i] = op over ranks of send[i]; send.numel == recv.numel.
  virtual absl::Status AllReduce(const Tensor& send, const Tensor& recv,
                                 ReduceOp op) = 0;
  // recv = concatenation of every rank's send in rank order;
  // recv.numel == size() * send.numel.
  virtual absl::Status AllGather(const Tensor& send, const Tensor& recv) = 0;
  // recv = this rank's block (block r = elements [r*n, (r+1)*n)) of the
  // reduction of every rank's send; send.numel == size() * recv.numel.
  virtual absl::Status ReduceScatter(const Tensor& send, const Tensor& recv,
                                     ReduceOp op) = 0;
  // Every rank's buf becomes root's buf.
  virtual absl::Status Broadcast(const Tensor& buf, int root) = 0;

  // Point-to-point. A Send must be matched by the peer's Recv of the same
  // numel and dtype. Between GroupStart() and GroupEnd() the calls may
  // complete in any order (NCCL group semantics: post a send and a receive
  // with the same peer together without deadlock); outside a group, a Send
  // may block until the peer receives.
  virtual absl::Status Send(const Tensor& buf, int peer) = 0;
  virtual absl::Status Recv(const Tensor& buf, int peer) = 0;
  virtual absl::Status GroupStart() = 0;
  virtual absl::Status GroupEnd() = 0;

  // Returns when every rank of the group has called it.
  virtual absl::Status Barrier() = 0;

  // Collective: ranks with the same color form a new group, ordered by key
  // (ties by rank), as ncclCommSplit. Every rank gets its own group.
  virtual absl::StatusOr<std::unique_ptr<Communicator>> Split(int color,
                                                              int key) = 0;
};

}  // namespace tessera::executor
