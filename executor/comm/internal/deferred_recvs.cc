#include "executor/comm/internal/deferred_recvs.h"

#include <utility>

#include "core/status_macros.h"
#include "executor/comm/internal/argument_checks.h"

namespace tessera::executor::comm_internal {

absl::Status DeferredRecvs::Defer(const Tensor& buf, int peer) {
  TESSERA_RETURN_IF_ERROR(CheckTensor("Recv: buf", buf));
  pending_.push_back(Pending{buf, peer});
  return absl::OkStatus();
}

absl::Status DeferredRecvs::End(RecvFn recv_now) {
  if (depth_ == 0) {
    return absl::FailedPreconditionError("GroupEnd without GroupStart");
  }
  if (--depth_ > 0) return absl::OkStatus();
  std::vector<Pending> recvs = std::move(pending_);
  pending_.clear();
  for (const Pending& recv : recvs) {
    TESSERA_RETURN_IF_ERROR(recv_now(recv.buf, recv.peer));
  }
  return absl::OkStatus();
}

}  // namespace tessera::executor::comm_internal
