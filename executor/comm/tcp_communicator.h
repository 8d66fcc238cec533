// The Communicator over TCP sockets between processes: one process per rank
// (as NCCL runs one per GPU), on one host or several, for CPU trials that
// span agents. Ranks meet through a rendezvous file (the only thing the
// agents relay between hosts; see internal/tcp_rendezvous.h), then keep one
// connection per pair of ranks, which every group split from the world
// reuses.
//
// Semantics are the in-process communicator's (inproc_communicator.h):
// - Collectives are deterministic and bit-identical on every rank, and
//   bitwise equal to InProcessCommunicator's for the same inputs: every
//   element is reduced at one owner over every rank's value in rank order
//   (AllReduce: reduce-scatter to the block owners, then all-gather), with
//   the same HostMemoryOps::Reduce (bf16 reduced in float, rounded once).
// - Every collective's first message to each peer carries the caller's
//   whole call, so every rank checks every other's: a mismatched
//   collective, count, dtype, op or root, or one rank's bad argument, is
//   INVALID_ARGUMENT on every rank, naming both sides ("... rank 3 passed
//   count 5 but rank 0 passed 4"), and the group stays usable.
// - Send is eager (the receiving process buffers whatever arrives), FIFO
//   per (group, sender, receiver); GroupStart/GroupEnd as in-process.
// - A peer that dies or disconnects aborts the world: every pending and
//   future operation of the survivors returns ABORTED naming it ("world
//   rank 2 disconnected: ..."), promptly. A peer that closes its last
//   communicator normally only fails operations that still need it. A wait
//   past the timeout is DEADLINE_EXCEEDED naming the op, group and ranks.
//
// Host memory only (the CPU backend): device buffers would need staging
// through host memory (or NCCL, which the CUDA backend uses instead).
//
//   TcpWorldOptions options;
//   options.rendezvous_file = "/run/tessera/trial-17.addr";
//   TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> world,
//                            ConnectTcpWorld(rank, world_size, options));
//   TESSERA_RETURN_IF_ERROR(world->AllReduce(grad, grad, ReduceOp::kSum));
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "executor/comm/communicator.h"
#include "executor/comm/internal/deferred_recvs.h"
#include "executor/tensor.h"

namespace tessera::executor {

namespace tcp_internal {
class TcpMesh;
struct Message;
}  // namespace tcp_internal

class TcpCommunicator;

struct TcpWorldOptions {
  // Where rank 0 writes "host:port\n" (temp file + rename) and the other
  // ranks look for it; rank 0 removes it once everyone has connected.
  // Required.
  std::string rendezvous_file;
  // Every rank listens on this address.
  std::string bind_host = "127.0.0.1";
  // Rank 0's listening port; 0 lets the kernel pick one (the other ranks
  // always take an ephemeral port).
  int port = 0;
  // What the other ranks connect to; empty means bind_host. Required when
  // bind_host is a wildcard ("0.0.0.0", "::").
  std::string advertise_host;
  // Bounds every wait: the rendezvous, each message of a collective, each
  // Recv, each write. InfiniteDuration() waits forever.
  absl::Duration timeout = absl::Minutes(10);
};

// Joins the world of `world_size` processes as `rank`: returns once every
// rank is connected to every other, with the communicator of the whole
// world (a TcpCommunicator). INVALID_ARGUMENT for bad arguments or options
// (naming the field) or ranks that disagree; DEADLINE_EXCEEDED when the
// others did not show up within options.timeout; UNAVAILABLE when sockets
// fail.
absl::StatusOr<std::unique_ptr<TcpCommunicator>> ConnectTcpWorld(
    int rank, int world_size, const TcpWorldOptions& options);

// One process's view of one group. Use it from one thread at a time;
// distinct communicators (a world and its splits) may be used concurrently.
// Buffers of one call must not partly overlap (in place: recv == send, or
// this rank's block). The connections live until the last communicator of
// the process is destroyed, which tells the peers goodbye and joins its
// threads, also after a failure.
class TcpCommunicator final : public Communicator {
 public:
  ~TcpCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(world_ranks_.size()); }
  // This rank's rank in the world, and the group's name ("world",
  // "world/split#0:color=1", ...), as error messages show them.
  int world_rank() const { return world_ranks_[rank_]; }
  const std::string& group_name() const { return name_; }

  absl::Status AllReduce(const Tensor& send, const Tensor& recv,
                         ReduceOp op) override;
  absl::Status AllGather(const Tensor& send, const Tensor& recv) override;
  absl::Status ReduceScatter(const Tensor& send, const Tensor& recv,
                             ReduceOp op) override;
  absl::Status Broadcast(const Tensor& buf, int root) override;

  // Send returns once the data is with the kernel; it never waits for the
  // peer's Recv. A Recv whose message has another dtype or numel is
  // INVALID_ARGUMENT naming both (the message is consumed). Inside
  // GroupStart/GroupEnd a Recv only checks its arguments and is carried
  // out, in call order, by the outermost GroupEnd.
  absl::Status Send(const Tensor& buf, int peer) override;
  absl::Status Recv(const Tensor& buf, int peer) override;
  absl::Status GroupStart() override;
  // FAILED_PRECONDITION without a matching GroupStart.
  absl::Status GroupEnd() override;

  absl::Status Barrier() override;
  // Colors must be >= 0 (INVALID_ARGUMENT on every rank otherwise). The
  // new group is named and identified alike on all its members (parent
  // name, split number, color), and talks over the same connections.
  absl::StatusOr<std::unique_ptr<Communicator>> Split(int color,
                                                      int key) override;

  // Makes every pending and future operation of this process, in every
  // group, return ABORTED with `cause`'s message (the first cause wins), and
  // tells every peer, whose operations then return ABORTED with "world rank
  // <r> aborted: <cause>". Callable from any thread.
  void Abort(const absl::Status& cause);
  // OK, or the ABORTED status operations return since the world aborted
  // (by Abort here or at a peer, or by a peer's disconnection).
  absl::Status abort_status() const;

 private:
  friend absl::StatusOr<std::unique_ptr<TcpCommunicator>> ConnectTcpWorld(
      int rank, int world_size, const TcpWorldOptions& options);
  struct Call;
  using PartFn = absl::FunctionRef<absl::string_view(int peer)>;

  TcpCommunicator(std::shared_ptr<tcp_internal::TcpMesh> mesh, std::string name,
                  std::vector<int> world_ranks, int rank);

  // One step of collective `seq`: sends each peer its part (or, when
  // call.local is an error, that error's text) with the call in the header,
  // and takes one message of this step from each peer into (*from)[r].
  absl::Status Exchange(const Call& call, uint64_t seq, int step, PartFn part,
                        std::vector<tcp_internal::Message>* from);
  // Exchange's step 0, then the check of every rank's call against rank
  // 0's, alike on every rank: OK or INVALID_ARGUMENT.
  absl::Status Arrive(const Call& call, uint64_t seq, PartFn part,
                      std::vector<tcp_internal::Message>* from);
  absl::Status RecvNow(const Tensor& buf, int peer);
  // "rank 2 (world rank 5)", or "rank 2" in the world group.
  std::string RankName(int rank) const;

  std::shared_ptr<tcp_internal::TcpMesh> mesh_;
  const std::string name_;
  const uint64_t id_;
  const std::vector<int> world_ranks_;  // by group rank
  const int rank_;
  uint64_t seq_ = 0;    // collectives called so far (their number)
  uint64_t sends_ = 0;  // Sends so far (for the wire)
  comm_internal::DeferredRecvs deferred_;  // GroupStart .. GroupEnd
};

}  // namespace tessera::executor
