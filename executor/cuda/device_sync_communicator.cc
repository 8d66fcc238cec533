#include "executor/cuda/device_sync_communicator.h"

#include <chrono>

namespace tessera::executor {

void DeviceSyncCommunicator::Sync() {
  const auto start = std::chrono::steady_clock::now();
  backend_->Synchronize();
  *sync_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
}

absl::Status DeviceSyncCommunicator::AllReduce(const Tensor& send,
                                               const Tensor& recv,
                                               ReduceOp op) {
  Sync();
  return inner_->AllReduce(send, recv, op);
}

absl::Status DeviceSyncCommunicator::AllGather(const Tensor& send,
                                               const Tensor& recv) {
  Sync();
  return inner_->AllGather(send, recv);
}

absl::Status DeviceSyncCommunicator::ReduceScatter(const Tensor& send,
                                                   const Tensor& recv,
                                                   ReduceOp op) {
  Sync();
  return inner_->ReduceScatter(send, recv, op);
}

absl::Status DeviceSyncCommunicator::Broadcast(const Tensor& buf, int root) {
  Sync();
  return inner_->Broadcast(buf, root);
}

absl::Status DeviceSyncCommunicator::Send(const Tensor& buf, int peer) {
  Sync();
  return inner_->Send(buf, peer);
}

absl::Status DeviceSyncCommunicator::Recv(const Tensor& buf, int peer) {
  Sync();
  return inner_->Recv(buf, peer);
}

absl::Status DeviceSyncCommunicator::GroupStart() {
  Sync();
  return inner_->GroupStart();
}

absl::Status DeviceSyncCommunicator::GroupEnd() {
  Sync();
  return inner_->GroupEnd();
}

absl::Status DeviceSyncCommunicator::Barrier() {
  Sync();
  return inner_->Barrier();
}

absl::StatusOr<std::unique_ptr<Communicator>> DeviceSyncCommunicator::Split(
    int color, int key) {
  absl::StatusOr<std::unique_ptr<Communicator>> child =
      inner_->Split(color, key);
  if (!child.ok()) return child.status();
  return std::unique_ptr<Communicator>(
      new DeviceSyncCommunicator(std::move(*child), backend_, sync_seconds_));
}

}  // namespace tessera::executor
