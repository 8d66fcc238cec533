// The checks of one rank's own arguments that every Communicator makes before
// a call touches a buffer, with the texts both implementations report
// (InProcessCommunicator and TcpCommunicator share this one copy, so their
// errors read alike). Collectives do not return these errors at once: the
// rank carries its error into the collective, which then fails on every rank
// naming it ("AllReduce #0 (f32 x 2, sum) on group world: rank 1: recv.numel
// 1 != send.numel 2"). Point-to-point calls and Split's color return or
// carry them as their communicator documents.
//
//   CollectiveCall call;
//   call.local = CheckAllReduce(send, recv);  // OK or INVALID_ARGUMENT
//   TESSERA_RETURN_IF_ERROR(CheckPeer("Send: peer", peer, size()));
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "executor/tensor.h"

namespace tessera::executor::comm_internal {

// OK when `t` can be read or written: a non-negative numel and, when not
// empty, a buffer. INVALID_ARGUMENT naming `name` ("buf.numel is -1",
// "send.data is null") otherwise.
absl::Status CheckTensor(absl::string_view name, const Tensor& t);

// Whether the bytes of a and b overlap (addresses compared as integers: the
// buffers may be device memory). Empty tensors overlap nothing.
bool Overlaps(const Tensor& a, const Tensor& b);

// The checks every data collective with a send and a recv shares: both
// tensors usable (CheckTensor) and of one dtype.
absl::Status CheckSendRecv(const Tensor& send, const Tensor& recv);

// AllReduce: CheckSendRecv, recv.numel == send.numel, and recv either is send
// (in place) or does not overlap it.
absl::Status CheckAllReduce(const Tensor& send, const Tensor& recv);

// AllGather by group rank `rank` of a group of `size`: CheckSendRecv,
// recv.numel == size * send.numel, and send either is this rank's block of
// recv (in place) or does not overlap recv.
absl::Status CheckAllGather(const Tensor& send, const Tensor& recv, int rank,
                            int size);

// ReduceScatter by group rank `rank` of a group of `size`: CheckSendRecv,
// send.numel == size * recv.numel, and recv either is this rank's block of
// send (in place) or does not overlap send.
absl::Status CheckReduceScatter(const Tensor& send, const Tensor& recv,
                                int rank, int size);

// Broadcast in a group of `size`: buf usable and CheckPeer("root", ...).
absl::Status CheckBroadcast(const Tensor& buf, int root, int size);

// Split: colors must be >= 0 (NCCL's NCCL_SPLIT_NOCOLOR, -1, "no group", is
// not offered).
absl::Status CheckSplitColor(int color);

// OK when 0 <= peer < size; else INVALID_ARGUMENT "<what> <peer> is outside
// the group's ranks [0, <size>)".
absl::Status CheckPeer(absl::string_view what, int peer, int size);

// OK when a Recv into `buf` matches the Send it is paired with, a message of
// `sent_dtype` x `sent_numel`; else INVALID_ARGUMENT "expected f32 x 3 but
// the matching Send has f32 x 4".
absl::Status CheckRecvMatchesSend(const Tensor& buf, DType sent_dtype,
                                  int64_t sent_numel);

}  // namespace tessera::executor::comm_internal
