// The in-process Communicator: the ranks are threads of one process and the
// collectives meet over shared buffers. Each collective waits for every rank
// of the group, checks that all passed the same op, count and dtype, and
// reduces in rank order, so that every rank gets bit-identical results that
// do not depend on thread timing (data-parallel replicas stay bitwise equal).
// Sends are eager: a Send copies its payload into the peer's mailbox and
// never blocks. Memory is touched only through MemoryOps (host memory by
// default), so the same code can run over device memory.
//
// Failures never hang the other ranks: InProcessWorld::Abort makes every
// pending and future operation return ABORTED, and a wait longer than the
// world's timeout returns DEADLINE_EXCEEDED naming the operation, the group
// and the missing ranks. RunRanks (run_ranks.h) wires this up for a function
// run on n threads.
//
//   TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<InProcessWorld> world,
//                            InProcessWorld::Create(4));
//   // on the thread of rank r:
//   Communicator& comm = world->communicator(r);
//   TESSERA_RETURN_IF_ERROR(comm.AllReduce(grad, grad, ReduceOp::kSum));
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "executor/comm/comm_stats.h"
#include "executor/comm/communicator.h"
#include "executor/comm/internal/deferred_recvs.h"
#include "executor/comm/memory_ops.h"
#include "executor/tensor.h"

namespace tessera::executor {

namespace comm_internal {
class Group;
class WorldState;
}  // namespace comm_internal

struct InProcessOptions {
  // The longest any rank waits for its peers (to arrive at a collective, or
  // for a message) before DEADLINE_EXCEEDED; InfiniteDuration() waits forever.
  absl::Duration timeout = absl::Minutes(10);
  // Memory primitives for the buffers; null means HostMemoryOps.
  std::shared_ptr<MemoryOps> memory_ops;
};

// One rank's view of one group. Use it from one thread at a time (the
// rank's own); distinct communicators may be used concurrently. Buffers of
// different ranks must not overlap; a recv either is its own rank's send (in
// place) or does not overlap it.
class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(std::shared_ptr<comm_internal::Group> group, int rank);
  ~InProcessCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override;
  // This rank's rank in the world, and the group's name ("world",
  // "world/split#0:color=1", ...), as error messages show them.
  int world_rank() const;
  const std::string& group_name() const;

  absl::Status AllReduce(const Tensor& send, const Tensor& recv,
                         ReduceOp op) override;
  absl::Status AllGather(const Tensor& send, const Tensor& recv) override;
  absl::Status ReduceScatter(const Tensor& send, const Tensor& recv,
                             ReduceOp op) override;
  absl::Status Broadcast(const Tensor& buf, int root) override;

  // Send never blocks. Inside GroupStart/GroupEnd a Recv only checks its
  // arguments; it is carried out, in call order, by the outermost GroupEnd,
  // which returns its errors. Sends and collectives inside a group run at
  // once (every rank calls collectives in the same order anyway).
  absl::Status Send(const Tensor& buf, int peer) override;
  absl::Status Recv(const Tensor& buf, int peer) override;
  absl::Status GroupStart() override;
  // FAILED_PRECONDITION without a matching GroupStart.
  absl::Status GroupEnd() override;

  absl::Status Barrier() override;
  // Colors must be >= 0 (INVALID_ARGUMENT on every rank otherwise).
  absl::StatusOr<std::unique_ptr<Communicator>> Split(int color,
                                                      int key) override;

  // Traffic counters of this communicator (not of its splits).
  const CommStats& stats() const { return stats_; }
  void ResetStats() { stats_ = CommStats{}; }

 private:
  absl::Status RecvNow(const Tensor& buf, int peer);

  std::shared_ptr<comm_internal::Group> group_;
  const int rank_;
  uint64_t seq_ = 0;  // collectives called so far on this group (their id)
  comm_internal::DeferredRecvs deferred_;  // GroupStart .. GroupEnd
  CommStats stats_;
};

// N ranks of one process. Owns each rank's root communicator (the whole
// world); communicators split from them share the world's abort status and
// timeout and may outlive it.
class InProcessWorld {
 public:
  // INVALID_ARGUMENT unless size >= 1 and the timeout is positive.
  static absl::StatusOr<std::unique_ptr<InProcessWorld>> Create(
      int size, InProcessOptions options = {});
  ~InProcessWorld();

  int size() const;
  // The root communicator of `rank`, 0 <= rank < size(); for that rank's
  // thread only.
  InProcessCommunicator& communicator(int rank) { return *ranks_[rank]; }

  // Makes every pending and future operation of every rank, in every group
  // of this world, return ABORTED with `cause`'s message (the first cause
  // wins); a collective that every rank has already joined completes.
  // Callable from any thread, any number of times.
  void Abort(const absl::Status& cause);
  // OK, or the ABORTED status that operations return after Abort.
  absl::Status abort_status() const;

 private:
  explicit InProcessWorld(std::shared_ptr<comm_internal::WorldState> state);

  std::shared_ptr<comm_internal::WorldState> state_;
  std::vector<std::unique_ptr<InProcessCommunicator>> ranks_;
};

}  // namespace tessera::executor
