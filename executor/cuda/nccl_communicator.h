// The Communicator over NCCL: one process per GPU, ranks meet through a
// rendezvous file holding rank 0's ncclUniqueId (nccl_id_file.h), groups come
// from ncclCommSplit. Buffers are device memory of the CUDA backend (f32,
// bf16, i32).
//
// Streams and ordering. Every communicator (the world and each split) has its
// own high-priority stream. An operation is enqueued there after an event
// recorded on the backend's compute stream (so it reads what the kernels
// issued before it wrote), and the compute stream then waits for the
// operation's end event before its next kernel: calls return at once, without
// blocking the host, and the device keeps program order. Exceptions, so that a
// pipeline cannot deadlock on blocking sends:
//   - Send outside a group copies the buffer to a staging buffer on the
//     compute stream and sends from there; the compute stream does not wait
//     (an eager send, as the in-process and TCP communicators' are).
//   - An NCCL send of more than its buffers hold blocks its stream until the
//     peer receives, and operations of one stream run in order. So point-to-
//     point traffic travels by direction: to higher ranks on the group's
//     communicator and stream, to lower ranks on a duplicate (ncclCommSplit
//     with one color) with a stream of its own. On either, messages flow one
//     way, so "A sends to B, B sends to A, then each receives" (interleaved
//     pipelines wrap around) cannot wait in a cycle.
//   - Sends and receives between GroupStart and GroupEnd go out together
//     (ncclGroupStart/End, on the group's stream); the compute stream waits
//     for the whole group.
// Barrier blocks the host until every rank has arrived.
//
// Timing. Each operation records events on its stream (start, end) and, when
// the compute stream waits for it, on the compute stream just before and
// after that wait. TakeTimings() adds them up: communication time is the sum
// of the operations' durations on their streams; exposed communication is the
// time the compute stream spent waiting for them (communication on the
// critical path; overlapped communication costs none).
//
// Asynchronous use (FSDP prefetch, DP gradient buckets). The Start* calls
// enqueue a collective without making the compute stream wait; Wait() adds
// the wait where the result is first needed. The engine is synchronous today
// and does not call them; see the proposal in this folder's README.md.
//
// Failures: NCCL and CUDA errors are statuses naming the call and NCCL's
// error string (ncclGetErrorString, ncclGetLastError). A rank that dies
// leaves the others blocked inside NCCL: tessera-trial's watchdog ends such a
// trial at its time limit. Arguments are checked before any NCCL call, but a
// rank that returns INVALID_ARGUMENT without calling leaves its peers
// waiting the same way: mismatched calls are bugs.
//
//   TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<NcclCommunicator> world,
//       ConnectNcclWorld(rank, world_size, backend->device(),
//                        backend->stream(), {.rendezvous_file = path}));
//   TESSERA_RETURN_IF_ERROR(world->AllReduce(grad, grad, ReduceOp::kSum));
//   TESSERA_ASSIGN_OR_RETURN(CommTimings t, world->TakeTimings());
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "executor/comm/communicator.h"
#include "executor/tensor.h"

struct ncclComm;

namespace tessera::executor {

namespace nccl_internal {
class NcclContext;
}  // namespace nccl_internal

struct NcclWorldOptions {
  // Where rank 0 publishes its unique id and the others find it; rank 0
  // removes it once every rank has joined. Required, fresh per trial.
  std::string rendezvous_file;
  // How long ranks other than 0 wait for the file.
  absl::Duration timeout = absl::Minutes(10);
};

// Communication of every communicator of one process since the last
// TakeTimings().
struct CommTimings {
  double comm_s = 0;     // operations' durations on their streams, summed
  double exposed_s = 0;  // the compute stream waiting for them
  int64_t ops = 0;
};

// A collective started with a Start* call and not yet waited for.
struct PendingComm {
  int64_t record = -1;
};

class NcclCommunicator final : public Communicator {
 public:
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  absl::Status AllReduce(const Tensor& send, const Tensor& recv,
                         ReduceOp op) override;
  absl::Status AllGather(const Tensor& send, const Tensor& recv) override;
  absl::Status ReduceScatter(const Tensor& send, const Tensor& recv,
                             ReduceOp op) override;
  absl::Status Broadcast(const Tensor& buf, int root) override;
  absl::Status Send(const Tensor& buf, int peer) override;
  absl::Status Recv(const Tensor& buf, int peer) override;
  absl::Status GroupStart() override;
  // FAILED_PRECONDITION without a matching GroupStart.
  absl::Status GroupEnd() override;
  absl::Status Barrier() override;
  // Colors must be >= 0: a negative color still takes part in the split
  // (NCCL_SPLIT_NOCOLOR) and then returns INVALID_ARGUMENT.
  absl::StatusOr<std::unique_ptr<Communicator>> Split(int color,
                                                      int key) override;

  // The collectives without the compute stream's wait (see above).
  absl::StatusOr<PendingComm> StartAllReduce(const Tensor& send,
                                             const Tensor& recv, ReduceOp op);
  absl::StatusOr<PendingComm> StartAllGather(const Tensor& send,
                                             const Tensor& recv);
  absl::StatusOr<PendingComm> StartReduceScatter(const Tensor& send,
                                                 const Tensor& recv,
                                                 ReduceOp op);
  // Makes the compute stream wait for `pending` (once).
  absl::Status Wait(PendingComm& pending);

  // Waits for every operation of this process's communicators issued since
  // the last call and returns their timings. FAILED_PRECONDITION while a
  // started collective has not been waited for.
  absl::StatusOr<CommTimings> TakeTimings();

  // After a failure on this rank: every communicator of the process is
  // destroyed with ncclCommAbort instead of ncclCommDestroy, which would wait
  // for operations that peers may never complete.
  void AbortOnDestruction();

 private:
  friend absl::StatusOr<std::unique_ptr<NcclCommunicator>> ConnectNcclWorld(
      int rank, int world_size, int device, cudaStream_t compute_stream,
      const NcclWorldOptions& options);

  NcclCommunicator(ncclComm* comm,
                   std::shared_ptr<nccl_internal::NcclContext> context);
  absl::Status Init();
  // Orders `stream` after the compute stream and opens a timing record;
  // returns its index.
  absl::StatusOr<int64_t> BeginOp(cudaStream_t stream);
  // Who waits for an operation: the compute stream at once (synchronous
  // calls), at Wait() (Start* calls), or nobody (eager sends).
  enum class Waiter { kComputeNow, kComputeLater, kNobody };
  // Closes record `index` on `stream` and arranges the wait.
  absl::Status EndOp(int64_t index, Waiter waiter, cudaStream_t stream);
  // BeginOp, the NCCL call(s) on `stream`, EndOp.
  template <typename Fn>
  absl::StatusOr<int64_t> RunOp(Waiter waiter, cudaStream_t stream,
                                Fn&& nccl_call);
  // The communicator and stream of point-to-point traffic with `peer`
  // outside a group.
  ncclComm* CommTo(int peer) const { return peer < rank_ ? down_ : comm_; }
  cudaStream_t StreamTo(int peer) const {
    return peer < rank_ ? down_stream_ : stream_;
  }

  ncclComm* comm_;            // collectives; messages to higher ranks
  ncclComm* down_ = nullptr;  // messages to lower ranks
  std::shared_ptr<nccl_internal::NcclContext> context_;
  int rank_ = 0;
  int size_ = 1;
  cudaStream_t stream_ = nullptr;
  cudaStream_t down_stream_ = nullptr;
  void* barrier_buffer_ = nullptr;  // one int32 on the device
  int group_depth_ = 0;
  int64_t group_record_ = -1;
};

// Joins the world of `world_size` processes as `rank` on `device`, ordering
// communication after `compute_stream` (the CUDA backend's). Rank 0 creates
// the unique id and publishes it; the others wait for it (DEADLINE_EXCEEDED
// after options.timeout). INVALID_ARGUMENT for bad arguments or a file of
// another world; errors of NCCL or CUDA otherwise.
absl::StatusOr<std::unique_ptr<NcclCommunicator>> ConnectNcclWorld(
    int rank, int world_size, int device, cudaStream_t compute_stream,
    const NcclWorldOptions& options);

}  // namespace tessera::executor
