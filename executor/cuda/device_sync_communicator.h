// A Communicator decorator for communicators that touch device buffers from
// the host side between kernels (the in-process communicator over
// DeviceMemoryOps): before every call it waits for the backend's stream, so
// the buffers hold everything the rank's kernels issued so far wrote, and a
// receive buffer is no longer in use. The wrapped calls complete before they
// return (MemoryOps' contract), so kernels issued afterwards see the results.
// Groups split from it are wrapped the same way, and add the time they spend
// waiting for the stream to the same counter: that is the rank's compute
// finishing, not communication, and a trial takes it out of the time its
// engine measured inside communicator calls.
//
//   InProcessCommunicator& world = in_process_world->communicator(rank);
//   DeviceSyncCommunicator synced(&world, backend.get());
//   RankEngine::Create(config, *backend, synced);
//   double waited_s = synced.sync_seconds();
#pragma once

#include <memory>
#include <utility>

#include "executor/backend.h"
#include "executor/comm/communicator.h"

namespace tessera::executor {

class DeviceSyncCommunicator final : public Communicator {
 public:
  // Wraps `inner` (not owned); `backend` is the rank's (not owned).
  DeviceSyncCommunicator(Communicator* inner, Backend* backend)
      : inner_(inner),
        backend_(backend),
        sync_seconds_(std::make_shared<double>(0.0)) {}

  // Seconds this communicator and its splits spent waiting for the
  // backend's stream (one rank's thread: no locking).
  double sync_seconds() const { return *sync_seconds_; }

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  absl::Status AllReduce(const Tensor& send, const Tensor& recv,
                         ReduceOp op) override;
  absl::Status AllGather(const Tensor& send, const Tensor& recv) override;
  absl::Status ReduceScatter(const Tensor& send, const Tensor& recv,
                             ReduceOp op) override;
  absl::Status Broadcast(const Tensor& buf, int root) override;
  absl::Status Send(const Tensor& buf, int peer) override;
  absl::Status Recv(const Tensor& buf, int peer) override;
  absl::Status GroupStart() override;
  absl::Status GroupEnd() override;
  absl::Status Barrier() override;
  absl::StatusOr<std::unique_ptr<Communicator>> Split(int color,
                                                      int key) override;

 private:
  // A split: owns `inner` and shares the parent's counter.
  DeviceSyncCommunicator(std::unique_ptr<Communicator> inner, Backend* backend,
                         std::shared_ptr<double> sync_seconds)
      : owned_(std::move(inner)),
        inner_(owned_.get()),
        backend_(backend),
        sync_seconds_(std::move(sync_seconds)) {}
  void Sync();

  std::unique_ptr<Communicator> owned_;
  Communicator* inner_;
  Backend* backend_;
  std::shared_ptr<double> sync_seconds_;
};

}  // namespace tessera::executor
