// The planner's own bounded pool for expensive, read-only calls (Plan,
// Predict): a fixed number of worker threads at a lower CPU priority and a
// bounded queue, so that a burst of large searches waits its turn behind
// heartbeats, leases and reports instead of occupying gRPC's threads and
// cores. A call that finds the queue full is refused at once (the caller
// answers RESOURCE_EXHAUSTED), so memory stays bounded too: at most
// threads + max_queued searches and replies exist at a time.
//
//   BackgroundPool pool({.threads = 2, .max_queued = 16});
//   if (!pool.TrySubmit([=] { reactor->Finish(Work()); })) {
//     reactor->Finish(Busy());
//   }
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace tessera::service {

struct BackgroundPoolOptions {
  int threads = 2;      // workers, at least 1
  int max_queued = 16;  // tasks waiting beyond those running, at least 0
  // Added to the workers' nice value (Linux, per thread): 10 lets any
  // normal-priority thread (a heartbeat's handler) run first on a busy core.
  int nice_increment = 10;
};

// Lowers the calling thread's priority by `increment` nice levels (on
// Linux, setpriority on a thread id applies to that thread alone), at most
// to 19. Best effort: failing leaves it as is.
void LowerThisThreadsPriority(int increment);

class BackgroundPool {
 public:
  // Starts the workers. Options out of range are clamped (threads >= 1,
  // max_queued >= 0).
  explicit BackgroundPool(BackgroundPoolOptions options);
  // Runs every task already accepted, then joins the workers.
  ~BackgroundPool();
  BackgroundPool(const BackgroundPool&) = delete;
  BackgroundPool& operator=(const BackgroundPool&) = delete;

  // Queues `task` and returns true; false (task not run, not kept) when
  // max_queued tasks already wait. Thread-safe.
  bool TrySubmit(std::function<void()> task);

  // "2 running, 16 queued": for the refusal's message.
  std::string Load() const;

 private:
  void Work();

  const BackgroundPoolOptions options_;
  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace tessera::service
