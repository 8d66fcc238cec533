// The rendezvous data of gang trials, kept in memory: the gang's node-rank-0
// agent publishes (its NCCL unique id or TCP address), every holder fetches,
// waiting up to a deadline. A fetch never blocks the caller's thread: its
// callback runs when the data is published, when the wait runs out (a
// timer thread watches the deadlines with a CondVar), or when the trial's
// entry is cleared (the trial ended). Who may publish or fetch is checked by
// the caller (the planner knows the leases).
//
//   board.Fetch(trial_id, absl::Now() + absl::Seconds(5),
//               [](absl::StatusOr<std::string> data) { ... });
//   board.Publish(trial_id, "10.0.0.1:29500");  // runs the waiting callback
//   board.Clear(trial_id);
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace tessera::service {

class RendezvousBoard {
 public:
  // Gets the data, DEADLINE_EXCEEDED when the wait ran out, or ABORTED when
  // the trial ended first. Runs on the publishing, clearing or timer thread
  // (or the fetching one when the data is there): it must not call the board.
  using Callback = std::function<void(absl::StatusOr<std::string>)>;

  RendezvousBoard();
  // Stop(), then frees the board.
  ~RendezvousBoard();

  // Fails the waiting fetches and every later one (ABORTED: the planner is
  // stopping) and stops the timer thread. Idempotent.
  void Stop();

  // Sets (or replaces) the trial's data and completes its waiting fetches.
  void Publish(int64_t trial_id, std::string data);
  // Completes `done` with the data now if published, else when published or
  // at `deadline`, whichever comes first.
  void Fetch(int64_t trial_id, absl::Time deadline, Callback done);
  // Forgets the trial's data and fails its waiting fetches (ABORTED).
  void Clear(int64_t trial_id);
  // The published data, if any (for tests and status).
  std::optional<std::string> Peek(int64_t trial_id) const;

 private:
  struct Waiter {
    int64_t trial_id = 0;
    absl::Time deadline;
    Callback done;
  };
  struct Entry {
    std::optional<std::string> data;
  };
  void RunTimer();

  mutable absl::Mutex mu_;
  absl::CondVar wake_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<int64_t, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::vector<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
  std::thread timer_;
};

}  // namespace tessera::service
