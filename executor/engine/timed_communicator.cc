#include "executor/engine/timed_communicator.h"

#include <chrono>

namespace tessera::executor {

template <typename Fn>
absl::Status TimedCommunicator::Timed(size_t bytes, Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  absl::Status s = fn();
  stats_->seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  stats_->bytes += static_cast<int64_t>(bytes);
  ++stats_->calls;
  return s;
}

absl::Status TimedCommunicator::AllReduce(const Tensor& send,
                                          const Tensor& recv, ReduceOp op) {
  return Timed(send.bytes(), [&] { return inner_->AllReduce(send, recv, op); });
}
absl::Status TimedCommunicator::AllGather(const Tensor& send,
                                          const Tensor& recv) {
  return Timed(recv.bytes(), [&] { return inner_->AllGather(send, recv); });
}
absl::Status TimedCommunicator::ReduceScatter(const Tensor& send,
                                              const Tensor& recv, ReduceOp op) {
  return Timed(send.bytes(),
               [&] { return inner_->ReduceScatter(send, recv, op); });
}
absl::Status TimedCommunicator::Broadcast(const Tensor& buf, int root) {
  return Timed(buf.bytes(), [&] { return inner_->Broadcast(buf, root); });
}
absl::Status TimedCommunicator::Send(const Tensor& buf, int peer) {
  return Timed(buf.bytes(), [&] { return inner_->Send(buf, peer); });
}
absl::Status TimedCommunicator::Recv(const Tensor& buf, int peer) {
  return Timed(buf.bytes(), [&] { return inner_->Recv(buf, peer); });
}
absl::Status TimedCommunicator::GroupStart() {
  return Timed(0, [&] { return inner_->GroupStart(); });
}
absl::Status TimedCommunicator::GroupEnd() {
  return Timed(0, [&] { return inner_->GroupEnd(); });
}
absl::Status TimedCommunicator::Barrier() {
  return Timed(0, [&] { return inner_->Barrier(); });
}

absl::StatusOr<std::unique_ptr<Communicator>> TimedCommunicator::Split(
    int color, int key) {
  absl::StatusOr<std::unique_ptr<Communicator>> child;
  absl::Status s = Timed(0, [&] {
    child = inner_->Split(color, key);
    return child.status();
  });
  if (!s.ok()) return s;
  return std::unique_ptr<Communicator>(
      new TimedCommunicator(std::move(*child), stats_));
}

}  // namespace tessera::executor
