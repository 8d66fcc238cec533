#include "executor/cuda/device_sync_communicator.h"

namespace tessera::executor {

absl::Status DeviceSyncCommunicator::AllReduce(const Tensor& send,
                                               const Tensor& recv,
                                               ReduceOp op) {
  backend_->Synchronize();
  return inner_->AllReduce(send, recv, op);
}

absl::Status DeviceSyncCommunicator::AllGather(const Tensor& send,
                                               const Tensor& recv) {
  backend_->Synchronize();
  return inner_->AllGather(send, recv);
}

absl::Status DeviceSyncCommunicator::ReduceScatter(const Tensor& send,
                                                   const Tensor& recv,
                                                   ReduceOp op) {
  backend_->Synchronize();
  return inner_->ReduceScatter(send, recv, op);
}

absl::Status DeviceSyncCommunicator::Broadcast(const Tensor& buf, int root) {
  backend_->Synchronize();
  return inner_->Broadcast(buf, root);
}

absl::Status DeviceSyncCommunicator::Send(const Tensor& buf, int peer) {
  backend_->Synchronize();
  return inner_->Send(buf, peer);
}

absl::Status DeviceSyncCommunicator::Recv(const Tensor& buf, int peer) {
  backend_->Synchronize();
  return inner_->Recv(buf, peer);
}

absl::Status DeviceSyncCommunicator::GroupStart() {
  backend_->Synchronize();
  return inner_->GroupStart();
}

absl::Status DeviceSyncCommunicator::GroupEnd() {
  backend_->Synchronize();
  return inner_->GroupEnd();
}

absl::Status DeviceSyncCommunicator::Barrier() {
  backend_->Synchronize();
  return inner_->Barrier();
}

absl::StatusOr<std::unique_ptr<Communicator>> DeviceSyncCommunicator::Split(
    int color, int key) {
  absl::StatusOr<std::unique_ptr<Communicator>> child =
      inner_->Split(color, key);
  if (!child.ok()) return child.status();
  return std::unique_ptr<Communicator>(
      new DeviceSyncCommunicator(std::move(*child), backend_));
}

}  // namespace tessera::executor
