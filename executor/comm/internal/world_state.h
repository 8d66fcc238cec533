// The state every group of one in-process world shares: its options, the
// abort status, and the groups to wake when it aborts. Internal to
// inproc_communicator.cc and its parts.
//
//   auto world = std::make_shared<WorldState>(8, absl::Seconds(60), ops);
//   MutexLock lock(mu);
//   if (!WaitUntil(lock, cv, world->DeadlineFromNow(),
//                  [&] { return ready || world->aborted(); })) { ...timeout }
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "executor/comm/internal/annotated_mutex.h"
#include "executor/comm/memory_ops.h"

namespace tessera::executor::comm_internal {

using Clock = std::chrono::steady_clock;
// When a wait gives up; nullopt waits forever.
using Deadline = std::optional<Clock::time_point>;

// Seconds elapsed since `start` (for CommStats).
inline double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Waits on `cv` until `ready()` or the deadline passes; returns ready().
template <typename Ready>
bool WaitUntil(MutexLock& lock, std::condition_variable& cv,
               const Deadline& deadline, Ready ready) {
  if (!deadline.has_value()) {
    cv.wait(lock.native(), ready);
    return true;
  }
  return cv.wait_until(lock.native(), *deadline, ready);
}

// Something holding waiters that an abort must wake (a group).
class Wakeable {
 public:
  virtual ~Wakeable() = default;
  // Notifies every waiter so that it re-checks WorldState::aborted().
  virtual void WakeAll() = 0;
};

class WorldState {
 public:
  // `timeout`: how long any wait may last (InfiniteDuration: forever).
  WorldState(int size, absl::Duration timeout,
             std::shared_ptr<MemoryOps> memory_ops);

  int size() const { return size_; }
  absl::Duration timeout() const { return timeout_; }
  MemoryOps& memory_ops() const { return *memory_ops_; }
  // Now + timeout.
  Deadline DeadlineFromNow() const;

  // True once Abort was called; safe to read under any lock.
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  // ABORTED with the first cause's message (OK before any abort).
  absl::Status abort_status() const;
  // Records the cause (the first one wins) and wakes every waiter of every
  // registered group. Must not be called with a group's lock held.
  void Abort(const absl::Status& cause);

  // Adds a group to wake on abort; kept weakly (groups die with their
  // communicators).
  void Register(std::weak_ptr<Wakeable> group);

 private:
  const int size_;
  const absl::Duration timeout_;
  const std::shared_ptr<MemoryOps> memory_ops_;
  std::atomic<bool> aborted_{false};

  mutable Mutex mu_;
  absl::Status abort_status_ ABSL_GUARDED_BY(mu_);
  std::vector<std::weak_ptr<Wakeable>> groups_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::executor::comm_internal
