#include "executor/comm/internal/world_state.h"

#include <utility>

namespace tessera::executor::comm_internal {

WorldState::WorldState(int size, absl::Duration timeout,
                       std::shared_ptr<MemoryOps> memory_ops)
    : size_(size), timeout_(timeout), memory_ops_(std::move(memory_ops)) {}

Deadline WorldState::DeadlineFromNow() const {
  // Beyond a year counts as forever (and keeps time_point from overflowing).
  if (timeout_ > absl::Hours(24 * 365)) return std::nullopt;
  return Clock::now() + absl::ToChronoNanoseconds(timeout_);
}

absl::Status WorldState::abort_status() const {
  MutexLock lock(mu_);
  return abort_status_;
}

void WorldState::Abort(const absl::Status& cause) {
  std::vector<std::shared_ptr<Wakeable>> to_wake;
  {
    MutexLock lock(mu_);
    if (abort_status_.ok()) {
      abort_status_ = absl::AbortedError(cause.ok() ? "the world was aborted"
                                                    : cause.message());
    }
    aborted_.store(true, std::memory_order_release);
    for (const std::weak_ptr<Wakeable>& weak : groups_) {
      if (std::shared_ptr<Wakeable> group = weak.lock()) {
        to_wake.push_back(std::move(group));
      }
    }
  }
  // Outside mu_: a group's lock is taken before mu_ elsewhere (Register).
  for (const std::shared_ptr<Wakeable>& group : to_wake) group->WakeAll();
}

void WorldState::Register(std::weak_ptr<Wakeable> group) {
  MutexLock lock(mu_);
  // Drop dead groups now and then so that repeated splits do not grow this.
  if (groups_.size() >= 64 && groups_.size() == groups_.capacity()) {
    std::erase_if(groups_, [](const std::weak_ptr<Wakeable>& weak) {
      return weak.expired();
    });
  }
  groups_.push_back(std::move(group));
}

}  // namespace tessera::executor::comm_internal
