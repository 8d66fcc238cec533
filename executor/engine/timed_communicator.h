// A Communicator decorator that adds the wall time and bytes of every call to
// shared counters, so a rank can report how much of its step it spent in
// communication. Groups split from it are timed into the same counters.
//
//   CommTotals stats;
//   TimedCommunicator timed(world, &stats);
//   ... ParallelGroups::Create(timed, layout) ...
//   double comm_s = stats.seconds;
#pragma once

#include <cstdint>
#include <memory>

#include "executor/comm/communicator.h"

namespace tessera::executor {

// Counters of one rank (not thread-safe: a rank's groups are used by one
// thread).
struct CommTotals {
  double seconds = 0;
  int64_t bytes = 0;  // payload bytes passed to calls
  int64_t calls = 0;
};

class TimedCommunicator final : public Communicator {
 public:
  // Times `inner` (not owned) into *stats.
  TimedCommunicator(Communicator* inner, CommTotals* stats)
      : inner_(inner), stats_(stats) {}
  // Times and owns `inner`.
  TimedCommunicator(std::unique_ptr<Communicator> inner, CommTotals* stats)
      : owned_(std::move(inner)), inner_(owned_.get()), stats_(stats) {}

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
  template <typename Fn>
  absl::Status Timed(size_t bytes, Fn&& fn);

  std::unique_ptr<Communicator> owned_;
  Communicator* inner_;
  CommTotals* stats_;
};

}  // namespace tessera::executor
