// The messages from one rank to one peer of a group, in the order sent. A
// Send never waits for the receiver: it copies straight into the receiver's
// buffer when a Recv is already waiting, else into a staging buffer (an eager
// send), so pipeline schedules cannot deadlock on their sends. A Recv takes
// the oldest message or waits for the next one.
//
//   Mailbox box(&world);
//   TESSERA_RETURN_IF_ERROR(box.Send(activations, stats));  // sender thread
//   TESSERA_RETURN_IF_ERROR(box.Recv(input, stats));        // receiver thread
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "executor/comm/comm_stats.h"
#include "executor/comm/internal/annotated_mutex.h"
#include "executor/comm/internal/world_state.h"
#include "executor/tensor.h"

namespace tessera::executor::comm_internal {

class Mailbox {
 public:
  explicit Mailbox(const WorldState* world) : world_(world) {}
  ~Mailbox();  // frees messages nobody received
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;

  // Delivers buf's contents. ABORTED after an abort; RESOURCE_EXHAUSTED when
  // no staging buffer can be had. A dtype or size mismatch is the receiver's
  // error, not the sender's.
  absl::Status Send(const Tensor& buf, CommStats& stats);
  // Moves the oldest message into buf. INVALID_ARGUMENT when its dtype or
  // numel differ from buf's (the message is consumed), ABORTED after an
  // abort, DEADLINE_EXCEEDED when nothing came within the world's timeout.
  // Messages name neither group nor ranks: the caller adds them.
  absl::Status Recv(const Tensor& buf, CommStats& stats);

  // Wakes a waiting receiver (after an abort).
  void WakeAll();

 private:
  struct Message {
    void* payload = nullptr;  // from MemoryOps::Allocate
    DType dtype = DType::kF32;
    int64_t numel = 0;
  };
  // A receiver waiting for the next message.
  struct PostedRecv {
    Tensor buf;
    bool done = false;
    absl::Status status;
  };

  const WorldState* const world_;
  Mutex mu_;
  std::condition_variable changed_;
  std::deque<Message> queue_ ABSL_GUARDED_BY(mu_);
  // Non-null only while queue_ is empty (FIFO order).
  PostedRecv* posted_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace tessera::executor::comm_internal
