#include "service/rendezvous_board.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace tessera::service {

RendezvousBoard::RendezvousBoard() : timer_([this] { RunTimer(); }) {}

RendezvousBoard::~RendezvousBoard() { Stop(); }

void RendezvousBoard::Stop() {
  std::vector<Waiter> waiting;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    waiting.swap(waiters_);
    wake_.SignalAll();
  }
  if (timer_.joinable() && timer_.get_id() != std::this_thread::get_id()) {
    timer_.join();
  }
  for (Waiter& w : waiting) {
    w.done(absl::AbortedError("the planner is stopping"));
  }
}

void RendezvousBoard::Publish(int64_t trial_id, std::string data) {
  std::vector<Waiter> ready;
  {
    absl::MutexLock lock(&mu_);
    entries_[trial_id].data = data;
    auto split = std::stable_partition(
        waiters_.begin(), waiters_.end(),
        [&](const Waiter& w) { return w.trial_id != trial_id; });
    std::move(split, waiters_.end(), std::back_inserter(ready));
    waiters_.erase(split, waiters_.end());
  }
  for (Waiter& w : ready) w.done(data);
}

void RendezvousBoard::Fetch(int64_t trial_id, absl::Time deadline,
                            Callback done) {
  std::optional<std::string> data;
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(trial_id);
    if (it != entries_.end() && it->second.data.has_value()) {
      data = it->second.data;
    } else if (!stopping_) {
      waiters_.push_back(Waiter{trial_id, deadline, std::move(done)});
      wake_.Signal();
      return;
    }
  }
  if (data.has_value()) {
    done(*std::move(data));
  } else {
    done(absl::AbortedError("the planner is stopping"));
  }
}

void RendezvousBoard::Clear(int64_t trial_id) {
  std::vector<Waiter> cleared;
  {
    absl::MutexLock lock(&mu_);
    entries_.erase(trial_id);
    auto split = std::stable_partition(
        waiters_.begin(), waiters_.end(),
        [&](const Waiter& w) { return w.trial_id != trial_id; });
    std::move(split, waiters_.end(), std::back_inserter(cleared));
    waiters_.erase(split, waiters_.end());
  }
  for (Waiter& w : cleared) {
    w.done(absl::AbortedError(
        absl::StrCat("trial ", trial_id, " ended before its rendezvous")));
  }
}

std::optional<std::string> RendezvousBoard::Peek(int64_t trial_id) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(trial_id);
  if (it == entries_.end()) return std::nullopt;
  return it->second.data;
}

void RendezvousBoard::RunTimer() {
  while (true) {
    std::vector<Waiter> expired;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      absl::Time next = absl::InfiniteFuture();
      for (const Waiter& w : waiters_) next = std::min(next, w.deadline);
      if (next > absl::Now()) {
        wake_.WaitWithDeadline(&mu_, next);
        if (stopping_) return;
      }
      const absl::Time now = absl::Now();
      auto split = std::stable_partition(
          waiters_.begin(), waiters_.end(),
          [&](const Waiter& w) { return w.deadline > now; });
      std::move(split, waiters_.end(), std::back_inserter(expired));
      waiters_.erase(split, waiters_.end());
    }
    for (Waiter& w : expired) {
      w.done(absl::DeadlineExceededError(absl::StrCat(
          "trial ", w.trial_id,
          ": nothing was published for the rendezvous in time; fetch "
          "again")));
    }
  }
}

}  // namespace tessera::service
