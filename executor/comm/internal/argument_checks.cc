#include "executor/comm/internal/argument_checks.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace tessera::executor::comm_internal {

absl::Status CheckTensor(absl::string_view name, const Tensor& t) {
  if (t.numel < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ".numel is ", t.numel));
  }
  if (t.numel > 0 && t.data == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(name, ".data is null"));
  }
  return absl::OkStatus();
}

bool Overlaps(const Tensor& a, const Tensor& b) {
  const auto a0 = reinterpret_cast<uintptr_t>(a.data);
  const auto b0 = reinterpret_cast<uintptr_t>(b.data);
  return a.bytes() > 0 && b.bytes() > 0 && a0 < b0 + b.bytes() &&
         b0 < a0 + a.bytes();
}

absl::Status CheckSendRecv(const Tensor& send, const Tensor& recv) {
  TESSERA_RETURN_IF_ERROR(CheckTensor("send", send));
  TESSERA_RETURN_IF_ERROR(CheckTensor("recv", recv));
  if (send.dtype != recv.dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("send.dtype ", DTypeName(send.dtype), " != recv.dtype ",
                     DTypeName(recv.dtype)));
  }
  return absl::OkStatus();
}

absl::Status CheckAllReduce(const Tensor& send, const Tensor& recv) {
  TESSERA_RETURN_IF_ERROR(CheckSendRecv(send, recv));
  if (recv.numel != send.numel) {
    return absl::InvalidArgumentError(
        absl::StrCat("recv.numel ", recv.numel, " != send.numel ", send.numel));
  }
  if (recv.data != send.data && Overlaps(send, recv)) {
    return absl::InvalidArgumentError(
        "recv partly overlaps send (in place needs recv == send)");
  }
  return absl::OkStatus();
}

namespace {

// The sizes and overlap of a collective's per-rank `block` and its `whole`
// (size blocks): AllGather's send and recv, ReduceScatter's recv and send.
absl::Status CheckBlockOfWhole(absl::string_view block_name,
                               const Tensor& block,
                               absl::string_view whole_name,
                               const Tensor& whole, int rank, int size) {
  if (whole.numel != size * block.numel) {
    return absl::InvalidArgumentError(
        absl::StrCat(whole_name, ".numel ", whole.numel, " != group size ",
                     size, " x ", block_name, ".numel ", block.numel));
  }
  if (block.data != whole.Slice(rank * block.numel, 0).data &&
      Overlaps(block, whole)) {
    return absl::InvalidArgumentError(absl::StrCat(
        block_name, " partly overlaps ", whole_name, " (in place needs ",
        block_name, " == this rank's block of ", whole_name, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckAllGather(const Tensor& send, const Tensor& recv, int rank,
                            int size) {
  TESSERA_RETURN_IF_ERROR(CheckSendRecv(send, recv));
  return CheckBlockOfWhole("send", send, "recv", recv, rank, size);
}

absl::Status CheckReduceScatter(const Tensor& send, const Tensor& recv,
                                int rank, int size) {
  TESSERA_RETURN_IF_ERROR(CheckSendRecv(send, recv));
  return CheckBlockOfWhole("recv", recv, "send", send, rank, size);
}

absl::Status CheckBroadcast(const Tensor& buf, int root, int size) {
  TESSERA_RETURN_IF_ERROR(CheckTensor("buf", buf));
  return CheckPeer("root", root, size);
}

absl::Status CheckSplitColor(int color) {
  if (color >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("color ", color, " (must be >= 0)"));
}

absl::Status CheckPeer(absl::string_view what, int peer, int size) {
  if (peer >= 0 && peer < size) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      what, " ", peer, " is outside the group's ranks [0, ", size, ")"));
}

absl::Status CheckRecvMatchesSend(const Tensor& buf, DType sent_dtype,
                                  int64_t sent_numel) {
  if (sent_dtype == buf.dtype && sent_numel == buf.numel) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "expected ", DTypeName(buf.dtype), " x ", buf.numel,
      " but the matching Send has ", DTypeName(sent_dtype), " x ", sent_numel));
}

}  // namespace tessera::executor::comm_internal
