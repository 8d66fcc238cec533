// NCCL group semantics for receives, as both communicators keep them:
// between GroupStart and the outermost GroupEnd a Recv only has its buffer
// checked and is queued; closing the outermost group carries the queued
// receives out in call order. Every Send of the group went out eagerly (the
// communicators' sends never wait for the receiver), so the receives cannot
// wait on each other.
//
//   absl::Status Recv(const Tensor& buf, int peer) {
//     if (deferred_.open()) return deferred_.Defer(buf, peer);
//     return RecvNow(buf, peer);
//   }
//   absl::Status GroupEnd() {
//     return deferred_.End(
//         [&](const Tensor& buf, int peer) { return RecvNow(buf, peer); });
//   }
#pragma once

#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "executor/tensor.h"

namespace tessera::executor::comm_internal {

// One rank's open groups and their receives. Not thread-safe: like its
// communicator, used from one thread at a time.
class DeferredRecvs {
 public:
  using RecvFn = absl::FunctionRef<absl::Status(const Tensor& buf, int peer)>;

  // GroupStart: opens a group (groups nest).
  void Start() { ++depth_; }
  // Whether a group is open, so that a Recv now is deferred.
  bool open() const { return depth_ > 0; }
  // Queues a receive of `buf` from `peer` once CheckTensor("Recv: buf", buf)
  // passes (INVALID_ARGUMENT otherwise, nothing queued).
  absl::Status Defer(const Tensor& buf, int peer);
  // GroupEnd: FAILED_PRECONDITION "GroupEnd without GroupStart" when no
  // group is open. Closing the outermost group runs `recv_now` on every
  // queued receive in call order and returns the first error (the receives
  // after it are dropped); closing an inner one returns OK.
  absl::Status End(RecvFn recv_now);

 private:
  struct Pending {
    Tensor buf;
    int peer = 0;
  };
  int depth_ = 0;
  std::vector<Pending> pending_;
};

}  // namespace tessera::executor::comm_internal
