#include "executor/cuda/nccl_communicator.h"

#include <nccl.h>

#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "executor/cuda/cuda_status.h"
#include "executor/cuda/nccl_id_file.h"

static_assert(sizeof(ncclUniqueId) == tessera::executor::kNcclIdBytes,
              "nccl_id_file.h's id size is NCCL_UNIQUE_ID_BYTES");

namespace tessera::executor {
namespace {

absl::StatusCode NcclCode(ncclResult_t r) {
  switch (r) {
    case ncclSuccess:
      return absl::StatusCode::kOk;
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      return absl::StatusCode::kInvalidArgument;
    case ncclSystemError:
    case ncclRemoteError:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

// "<call>: <error string> (<last error>)", or OK.
absl::Status NcclStatus(ncclResult_t r, absl::string_view call,
                        ncclComm_t comm) {
  if (r == ncclSuccess) return absl::OkStatus();
  const char* detail = ncclGetLastError(comm);
  return absl::Status(NcclCode(r),
                      absl::StrCat(call, ": ", ncclGetErrorString(r),
                                   detail != nullptr && detail[0] != '\0'
                                       ? absl::StrCat(" (", detail, ")")
                                       : std::string()));
}

#define TESSERA_NCCL_RETURN_IF_ERROR(call, comm) \
  TESSERA_RETURN_IF_ERROR(NcclStatus((call), #call, (comm)))

absl::StatusOr<ncclDataType_t> NcclType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return ncclFloat32;
    case DType::kBF16:
      return ncclBfloat16;
    case DType::kI32:
      return ncclInt32;
  }
  return absl::InvalidArgumentError("nccl: unknown dtype");
}

ncclRedOp_t NcclOp(ReduceOp op) {
  return op == ReduceOp::kSum ? ncclSum : ncclMax;
}

absl::Status CheckBuffer(absl::string_view name, const Tensor& t) {
  if (t.numel < 0 || (t.numel > 0 && t.data == nullptr)) {
    return absl::InvalidArgumentError(
        absl::StrCat("nccl: ", name, " is empty or negative"));
  }
  return absl::OkStatus();
}

absl::Status CheckSameDType(const Tensor& send, const Tensor& recv) {
  if (send.dtype != recv.dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("nccl: send is ", DTypeName(send.dtype), ", recv is ",
                     DTypeName(recv.dtype)));
  }
  return absl::OkStatus();
}

}  // namespace

namespace nccl_internal {

// What every communicator of one process shares: the device, the compute
// stream, an ordering event, a pool of timing events and the timing records.
// One thread uses a process's communicators (the rank's).
class NcclContext {
 public:
  struct Record {
    cudaEvent_t start = nullptr, end = nullptr;      // on the op's stream
    cudaEvent_t arrive = nullptr, resume = nullptr;  // on the compute stream
    bool waited = false;  // the compute stream waits for it
  };

  NcclContext(int device, cudaStream_t compute)
      : device_(device), compute_(compute) {}
  ~NcclContext() {
    cudaSetDevice(device_);
    for (const Record& r : records_) {
      for (cudaEvent_t e : {r.start, r.end, r.arrive, r.resume}) {
        if (e != nullptr) cudaEventDestroy(e);
      }
    }
    for (cudaEvent_t e : free_) cudaEventDestroy(e);
    if (ready_ != nullptr) cudaEventDestroy(ready_);
    cudaGetLastError();
  }

  int device() const { return device_; }
  cudaStream_t compute() const { return compute_; }

  // Makes `stream` wait for everything issued so far on the compute stream.
  absl::Status OrderAfterCompute(cudaStream_t stream) {
    if (ready_ == nullptr) {
      TESSERA_CUDA_RETURN_IF_ERROR(
          cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    }
    TESSERA_CUDA_RETURN_IF_ERROR(cudaEventRecord(ready_, compute_));
    TESSERA_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, ready_, 0));
    return absl::OkStatus();
  }

  absl::StatusOr<cudaEvent_t> TakeEvent() {
    if (!free_.empty()) {
      cudaEvent_t e = free_.back();
      free_.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    TESSERA_CUDA_RETURN_IF_ERROR(cudaEventCreate(&e));
    return e;
  }

  // Opens a record whose start event is recorded on `stream` now.
  absl::StatusOr<int64_t> Open(cudaStream_t stream) {
    Record r;
    TESSERA_ASSIGN_OR_RETURN(r.start, TakeEvent());
    records_.push_back(r);  // owned by the context from here on
    TESSERA_CUDA_RETURN_IF_ERROR(cudaEventRecord(r.start, stream));
    return static_cast<int64_t>(records_.size()) - 1;
  }

  // Records the end of `index` on `stream`.
  absl::Status Close(int64_t index, cudaStream_t stream) {
    TESSERA_ASSIGN_OR_RETURN(cudaEvent_t end, TakeEvent());
    records_[index].end = end;
    TESSERA_CUDA_RETURN_IF_ERROR(cudaEventRecord(end, stream));
    return absl::OkStatus();
  }

  // The compute stream waits for record `index`'s end, timed (once).
  absl::Status ComputeWaits(int64_t index) {
    Record& r = records_[index];
    if (r.waited) return absl::OkStatus();
    TESSERA_ASSIGN_OR_RETURN(r.arrive, TakeEvent());
    TESSERA_ASSIGN_OR_RETURN(r.resume, TakeEvent());
    TESSERA_CUDA_RETURN_IF_ERROR(cudaEventRecord(r.arrive, compute_));
    TESSERA_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(compute_, r.end, 0));
    TESSERA_CUDA_RETURN_IF_ERROR(cudaEventRecord(r.resume, compute_));
    r.waited = true;
    return absl::OkStatus();
  }

  // Started collectives that Wait() has not seen yet.
  void AddUnwaited(int64_t delta) { unwaited_ += delta; }

  void set_aborting() { aborting_ = true; }
  bool aborting() const { return aborting_; }
  bool valid(int64_t index) const {
    return index >= 0 && index < static_cast<int64_t>(records_.size());
  }

  absl::StatusOr<CommTimings> Take() {
    if (unwaited_ > 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("nccl timings: ", unwaited_,
                       " started collectives were never waited for"));
    }
    CommTimings t;
    for (Record& r : records_) {
      float ms = 0;
      if (r.end != nullptr) {
        TESSERA_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(r.end));
        TESSERA_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, r.start, r.end));
        t.comm_s += ms / 1000.0;
      }
      if (r.resume != nullptr) {
        TESSERA_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(r.resume));
        TESSERA_CUDA_RETURN_IF_ERROR(
            cudaEventElapsedTime(&ms, r.arrive, r.resume));
        t.exposed_s += ms / 1000.0;
      }
      ++t.ops;
      for (cudaEvent_t e : {r.start, r.end, r.arrive, r.resume}) {
        if (e != nullptr) free_.push_back(e);
      }
    }
    records_.clear();
    return t;
  }

 private:
  const int device_;
  const cudaStream_t compute_;
  cudaEvent_t ready_ = nullptr;
  std::vector<cudaEvent_t> free_;
  std::vector<Record> records_;
  int64_t unwaited_ = 0;
  bool aborting_ = false;
};

}  // namespace nccl_internal

using nccl_internal::NcclContext;

NcclCommunicator::NcclCommunicator(ncclComm* comm,
                                   std::shared_ptr<NcclContext> context)
    : comm_(comm), context_(std::move(context)) {}

absl::Status NcclCommunicator::Init() {
  TESSERA_CUDA_RETURN_IF_ERROR(cudaSetDevice(context_->device()));
  TESSERA_NCCL_RETURN_IF_ERROR(ncclCommCount(comm_, &size_), comm_);
  TESSERA_NCCL_RETURN_IF_ERROR(ncclCommUserRank(comm_, &rank_), comm_);
  int least = 0, greatest = 0;
  TESSERA_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetStreamPriorityRange(&least, &greatest));
  TESSERA_CUDA_RETURN_IF_ERROR(
      cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest));
  TESSERA_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithPriority(
      &down_stream_, cudaStreamNonBlocking, greatest));
  // The same ranks again, for messages to lower ranks (see the header).
  TESSERA_NCCL_RETURN_IF_ERROR(
      ncclCommSplit(comm_, /*color=*/0, /*key=*/rank_, &down_, nullptr), comm_);
  TESSERA_CUDA_RETURN_IF_ERROR(cudaMalloc(&barrier_buffer_, sizeof(int32_t)));
  TESSERA_CUDA_RETURN_IF_ERROR(cudaMemset(barrier_buffer_, 0, sizeof(int32_t)));
  return absl::OkStatus();
}

NcclCommunicator::~NcclCommunicator() {
  cudaSetDevice(context_->device());
  for (ncclComm_t comm : {down_, comm_}) {
    if (comm == nullptr) continue;
    if (context_->aborting()) {
      ncclCommAbort(comm);
    } else {
      ncclCommDestroy(comm);  // finishes the issued work first
    }
  }
  for (cudaStream_t stream : {down_stream_, stream_}) {
    if (stream == nullptr) continue;
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
  }
  if (barrier_buffer_ != nullptr) cudaFree(barrier_buffer_);
  cudaGetLastError();
}

absl::StatusOr<int64_t> NcclCommunicator::BeginOp(cudaStream_t stream) {
  TESSERA_RETURN_IF_ERROR(context_->OrderAfterCompute(stream));
  return context_->Open(stream);
}

absl::Status NcclCommunicator::EndOp(int64_t index, Waiter waiter,
                                     cudaStream_t stream) {
  TESSERA_RETURN_IF_ERROR(context_->Close(index, stream));
  switch (waiter) {
    case Waiter::kComputeNow:
      return context_->ComputeWaits(index);
    case Waiter::kComputeLater:
      context_->AddUnwaited(1);
      return absl::OkStatus();
    case Waiter::kNobody:
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

template <typename Fn>
absl::StatusOr<int64_t> NcclCommunicator::RunOp(Waiter waiter,
                                                cudaStream_t stream,
                                                Fn&& nccl_call) {
  TESSERA_ASSIGN_OR_RETURN(int64_t index, BeginOp(stream));
  TESSERA_RETURN_IF_ERROR(nccl_call());
  TESSERA_RETURN_IF_ERROR(EndOp(index, waiter, stream));
  return index;
}

// ---- Collectives --------------------------------------------------------

absl::StatusOr<PendingComm> NcclCommunicator::StartAllReduce(const Tensor& send,
                                                             const Tensor& recv,
                                                             ReduceOp op) {
  TESSERA_RETURN_IF_ERROR(CheckBuffer("send", send));
  TESSERA_RETURN_IF_ERROR(CheckBuffer("recv", recv));
  TESSERA_RETURN_IF_ERROR(CheckSameDType(send, recv));
  if (send.numel != recv.numel) {
    return absl::InvalidArgumentError(
        absl::StrCat("nccl AllReduce: recv.numel ", recv.numel,
                     " != send.numel ", send.numel));
  }
  TESSERA_ASSIGN_OR_RETURN(ncclDataType_t type, NcclType(send.dtype));
  TESSERA_ASSIGN_OR_RETURN(
      int64_t index, RunOp(Waiter::kComputeLater, stream_, [&] {
        return NcclStatus(
            ncclAllReduce(send.data, recv.data, static_cast<size_t>(send.numel),
                          type, NcclOp(op), comm_, stream_),
            "ncclAllReduce", comm_);
      }));
  return PendingComm{index};
}

absl::StatusOr<PendingComm> NcclCommunicator::StartAllGather(
    const Tensor& send, const Tensor& recv) {
  TESSERA_RETURN_IF_ERROR(CheckBuffer("send", send));
  TESSERA_RETURN_IF_ERROR(CheckBuffer("recv", recv));
  TESSERA_RETURN_IF_ERROR(CheckSameDType(send, recv));
  if (recv.numel != static_cast<int64_t>(size_) * send.numel) {
    return absl::InvalidArgumentError(
        absl::StrCat("nccl AllGather: recv.numel ", recv.numel,
                     " != group size ", size_, " x send.numel ", send.numel));
  }
  TESSERA_ASSIGN_OR_RETURN(ncclDataType_t type, NcclType(send.dtype));
  TESSERA_ASSIGN_OR_RETURN(
      int64_t index, RunOp(Waiter::kComputeLater, stream_, [&] {
        return NcclStatus(
            ncclAllGather(send.data, recv.data, static_cast<size_t>(send.numel),
                          type, comm_, stream_),
            "ncclAllGather", comm_);
      }));
  return PendingComm{index};
}

absl::StatusOr<PendingComm> NcclCommunicator::StartReduceScatter(
    const Tensor& send, const Tensor& recv, ReduceOp op) {
  TESSERA_RETURN_IF_ERROR(CheckBuffer("send", send));
  TESSERA_RETURN_IF_ERROR(CheckBuffer("recv", recv));
  TESSERA_RETURN_IF_ERROR(CheckSameDType(send, recv));
  if (send.numel != static_cast<int64_t>(size_) * recv.numel) {
    return absl::InvalidArgumentError(
        absl::StrCat("nccl ReduceScatter: send.numel ", send.numel,
                     " != group size ", size_, " x recv.numel ", recv.numel));
  }
  TESSERA_ASSIGN_OR_RETURN(ncclDataType_t type, NcclType(send.dtype));
  TESSERA_ASSIGN_OR_RETURN(
      int64_t index, RunOp(Waiter::kComputeLater, stream_, [&] {
        return NcclStatus(ncclReduceScatter(send.data, recv.data,
                                            static_cast<size_t>(recv.numel),
                                            type, NcclOp(op), comm_, stream_),
                          "ncclReduceScatter", comm_);
      }));
  return PendingComm{index};
}

absl::Status NcclCommunicator::Wait(PendingComm& pending) {
  if (!context_->valid(pending.record)) {
    return absl::FailedPreconditionError(
        "nccl Wait: not a pending collective of this step");
  }
  TESSERA_RETURN_IF_ERROR(context_->ComputeWaits(pending.record));
  context_->AddUnwaited(-1);
  pending.record = -1;
  return absl::OkStatus();
}

absl::Status NcclCommunicator::AllReduce(const Tensor& send, const Tensor& recv,
                                         ReduceOp op) {
  TESSERA_ASSIGN_OR_RETURN(PendingComm p, StartAllReduce(send, recv, op));
  return Wait(p);
}

absl::Status NcclCommunicator::AllGather(const Tensor& send,
                                         const Tensor& recv) {
  TESSERA_ASSIGN_OR_RETURN(PendingComm p, StartAllGather(send, recv));
  return Wait(p);
}

absl::Status NcclCommunicator::ReduceScatter(const Tensor& send,
                                             const Tensor& recv, ReduceOp op) {
  TESSERA_ASSIGN_OR_RETURN(PendingComm p, StartReduceScatter(send, recv, op));
  return Wait(p);
}

absl::Status NcclCommunicator::Broadcast(const Tensor& buf, int root) {
  TESSERA_RETURN_IF_ERROR(CheckBuffer("buf", buf));
  if (root < 0 || root >= size_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "nccl Broadcast: root ", root, " outside the group of ", size_));
  }
  TESSERA_ASSIGN_OR_RETURN(ncclDataType_t type, NcclType(buf.dtype));
  return RunOp(Waiter::kComputeNow, stream_,
               [&] {
                 return NcclStatus(ncclBroadcast(buf.data, buf.data,
                                                 static_cast<size_t>(buf.numel),
                                                 type, root, comm_, stream_),
                                   "ncclBroadcast", comm_);
               })
      .status();
}

// ---- Point-to-point -----------------------------------------------------

absl::Status NcclCommunicator::Send(const Tensor& buf, int peer) {
  TESSERA_RETURN_IF_ERROR(CheckBuffer("buf", buf));
  if (peer < 0 || peer >= size_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "nccl Send: peer ", peer, " outside the group of ", size_));
  }
  TESSERA_ASSIGN_OR_RETURN(ncclDataType_t type, NcclType(buf.dtype));
  const size_t count = static_cast<size_t>(buf.numel);
  if (peer == rank_ && group_depth_ == 0) {
    return absl::InvalidArgumentError(
        "nccl Send: to this rank itself only inside GroupStart/GroupEnd");
  }
  if (group_depth_ > 0) {  // goes out with the group, which compute waits for
    return NcclStatus(
        ncclSend(buf.data, count, type, peer, CommTo(peer), stream_),
        "ncclSend", CommTo(peer));
  }
  // Eager: send a copy, so the compute stream need not wait for the peer.
  void* staging = nullptr;
  if (buf.bytes() > 0) {
    const cudaStream_t compute = context_->compute();
    if (cudaError_t e = cudaMallocAsync(&staging, buf.bytes(), compute);
        e != cudaSuccess) {
      cudaGetLastError();
      const absl::Status s = cuda::CudaCallStatus(e, "cudaMallocAsync");
      return absl::Status(s.code(),
                          absl::StrCat("nccl Send: staging ", buf.bytes(),
                                       " bytes: ", s.message()));
    }
    TESSERA_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
        staging, buf.data, buf.bytes(), cudaMemcpyDeviceToDevice, compute));
  }
  ncclComm_t comm = CommTo(peer);
  cudaStream_t stream = StreamTo(peer);
  TESSERA_RETURN_IF_ERROR(
      RunOp(Waiter::kNobody, stream, [&] {
        return NcclStatus(ncclSend(staging, count, type, peer, comm, stream),
                          "ncclSend", comm);
      }).status());
  // Freed in stream order once the send is out.
  if (staging != nullptr) {
    TESSERA_CUDA_RETURN_IF_ERROR(cudaFreeAsync(staging, stream));
  }
  return absl::OkStatus();
}

absl::Status NcclCommunicator::Recv(const Tensor& buf, int peer) {
  TESSERA_RETURN_IF_ERROR(CheckBuffer("buf", buf));
  if (peer < 0 || peer >= size_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "nccl Recv: peer ", peer, " outside the group of ", size_));
  }
  TESSERA_ASSIGN_OR_RETURN(ncclDataType_t type, NcclType(buf.dtype));
  const size_t count = static_cast<size_t>(buf.numel);
  if (peer == rank_ && group_depth_ == 0) {
    return absl::InvalidArgumentError(
        "nccl Recv: from this rank itself only inside GroupStart/GroupEnd");
  }
  // A message from a lower rank travels on the communicator of messages to
  // higher ranks, and the other way round.
  ncclComm_t comm = peer > rank_ ? down_ : comm_;
  if (group_depth_ > 0) {
    return NcclStatus(ncclRecv(buf.data, count, type, peer, comm, stream_),
                      "ncclRecv", comm);
  }
  cudaStream_t stream = peer > rank_ ? down_stream_ : stream_;
  return RunOp(Waiter::kComputeNow, stream,
               [&] {
                 return NcclStatus(
                     ncclRecv(buf.data, count, type, peer, comm, stream),
                     "ncclRecv", comm);
               })
      .status();
}

absl::Status NcclCommunicator::GroupStart() {
  if (group_depth_ == 0) {
    TESSERA_ASSIGN_OR_RETURN(group_record_, BeginOp(stream_));
  }
  TESSERA_NCCL_RETURN_IF_ERROR(ncclGroupStart(), comm_);
  ++group_depth_;
  return absl::OkStatus();
}

absl::Status NcclCommunicator::GroupEnd() {
  if (group_depth_ == 0) {
    return absl::FailedPreconditionError(
        "nccl GroupEnd without a matching GroupStart");
  }
  TESSERA_NCCL_RETURN_IF_ERROR(ncclGroupEnd(), comm_);
  if (--group_depth_ > 0) return absl::OkStatus();
  const int64_t record = group_record_;
  group_record_ = -1;
  return EndOp(record, Waiter::kComputeNow, stream_);
}

absl::Status NcclCommunicator::Barrier() {
  TESSERA_CUDA_RETURN_IF_ERROR(cudaSetDevice(context_->device()));
  TESSERA_NCCL_RETURN_IF_ERROR(
      ncclAllReduce(barrier_buffer_, barrier_buffer_, 1, ncclInt32, ncclSum,
                    comm_, stream_),
      comm_);
  TESSERA_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Communicator>> NcclCommunicator::Split(int color,
                                                                      int key) {
  TESSERA_CUDA_RETURN_IF_ERROR(cudaSetDevice(context_->device()));
  ncclComm_t child = nullptr;
  TESSERA_NCCL_RETURN_IF_ERROR(
      ncclCommSplit(comm_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &child,
                    nullptr),
      comm_);
  if (color < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("nccl Split: color ", color, " (must be >= 0)"));
  }
  std::unique_ptr<NcclCommunicator> split(
      new NcclCommunicator(child, context_));
  TESSERA_RETURN_IF_ERROR(split->Init());
  return std::unique_ptr<Communicator>(std::move(split));
}

absl::StatusOr<CommTimings> NcclCommunicator::TakeTimings() {
  return context_->Take();
}

void NcclCommunicator::AbortOnDestruction() { context_->set_aborting(); }

// ---- The world ----------------------------------------------------------

absl::StatusOr<std::unique_ptr<NcclCommunicator>> ConnectNcclWorld(
    int rank, int world_size, int device, cudaStream_t compute_stream,
    const NcclWorldOptions& options) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("nccl world: rank ", rank, " of ", world_size, " ranks"));
  }
  if (options.rendezvous_file.empty()) {
    return absl::InvalidArgumentError("nccl world: rendezvous_file: required");
  }
  TESSERA_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  ncclUniqueId id;
  if (rank == 0) {
    TESSERA_NCCL_RETURN_IF_ERROR(ncclGetUniqueId(&id), nullptr);
    TESSERA_RETURN_IF_ERROR(PublishNcclId(
        options.rendezvous_file,
        absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(id.internal),
                            sizeof(id.internal)),
        world_size));
  } else {
    TESSERA_ASSIGN_OR_RETURN(
        std::vector<uint8_t> bytes,
        AwaitNcclId(options.rendezvous_file, world_size, options.timeout));
    std::memcpy(id.internal, bytes.data(), sizeof(id.internal));
  }
  ncclComm_t comm = nullptr;
  const ncclResult_t r = ncclCommInitRank(&comm, world_size, id, rank);
  if (rank == 0) std::remove(options.rendezvous_file.c_str());
  TESSERA_RETURN_IF_ERROR(NcclStatus(r, "ncclCommInitRank", comm));
  auto context = std::make_shared<NcclContext>(device, compute_stream);
  std::unique_ptr<NcclCommunicator> world(
      new NcclCommunicator(comm, std::move(context)));
  TESSERA_RETURN_IF_ERROR(world->Init());
  return world;
}

}  // namespace tessera::executor
