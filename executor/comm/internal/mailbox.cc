#include "executor/comm/internal/mailbox.h"

#include "absl/strings/str_cat.h"
#include "executor/comm/internal/argument_checks.h"

namespace tessera::executor::comm_internal {

Mailbox::~Mailbox() {
  for (const Message& message : queue_) {
    world_->memory_ops().Free(message.payload);
  }
}

absl::Status Mailbox::Send(const Tensor& buf, CommStats& stats) {
  MemoryOps& ops = world_->memory_ops();
  MutexLock lock(mu_);
  if (world_->aborted()) return world_->abort_status();
  const Clock::time_point start = Clock::now();
  if (posted_ != nullptr) {  // the receiver waits: copy straight into it
    PostedRecv& recv = *posted_;
    recv.status = CheckRecvMatchesSend(recv.buf, buf.dtype, buf.numel);
    if (recv.status.ok()) {
      recv.status = ops.Copy(recv.buf.data, buf.data, buf.bytes());
    }
    recv.done = true;
    posted_ = nullptr;
    changed_.notify_all();
    stats.copy_s += SecondsSince(start);
    return absl::OkStatus();
  }
  absl::StatusOr<void*> payload = ops.Allocate(buf.bytes());
  if (!payload.ok()) return payload.status();
  if (absl::Status copied = ops.Copy(*payload, buf.data, buf.bytes());
      !copied.ok()) {
    ops.Free(*payload);
    return copied;
  }
  queue_.push_back(Message{*payload, buf.dtype, buf.numel});
  stats.copy_s += SecondsSince(start);
  return absl::OkStatus();
}

absl::Status Mailbox::Recv(const Tensor& buf, CommStats& stats) {
  MemoryOps& ops = world_->memory_ops();
  MutexLock lock(mu_);
  if (world_->aborted()) return world_->abort_status();
  if (!queue_.empty()) {  // eager send: take the staged copy
    const Message message = queue_.front();
    queue_.pop_front();
    lock.Unlock();  // the message is ours now
    const Clock::time_point start = Clock::now();
    absl::Status status =
        CheckRecvMatchesSend(buf, message.dtype, message.numel);
    if (status.ok()) status = ops.Copy(buf.data, message.payload, buf.bytes());
    ops.Free(message.payload);
    stats.copy_s += SecondsSince(start);
    return status;
  }
  // Wait for the sender to copy into buf.
  const Clock::time_point start = Clock::now();
  PostedRecv recv;
  recv.buf = buf;
  posted_ = &recv;
  const bool woken = WaitUntil(lock, changed_, world_->DeadlineFromNow(),
                               [&] { return recv.done || world_->aborted(); });
  stats.wait_s += SecondsSince(start);
  if (recv.done) return recv.status;
  posted_ = nullptr;  // withdrawn under the lock: no sender can be copying
  if (woken) return world_->abort_status();
  return absl::DeadlineExceededError(absl::StrCat(
      "no message within ", absl::FormatDuration(world_->timeout())));
}

void Mailbox::WakeAll() {
  MutexLock lock(mu_);
  changed_.notify_all();
}

}  // namespace tessera::executor::comm_internal
