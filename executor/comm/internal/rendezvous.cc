#include "executor/comm/internal/rendezvous.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tessera::executor::comm_internal {

Rendezvous::Rendezvous(const WorldState* world, std::string group_name,
                       int size)
    : world_(world), group_name_(std::move(group_name)), size_(size) {}

absl::Status Rendezvous::Run(int rank, uint64_t seq, const CollectiveCall& call,
                             Work work, RankNamer name_rank, CommStats& stats) {
  const Clock::time_point arrival = Clock::now();
  MutexLock lock(mu_);
  if (world_->aborted()) return world_->abort_status();
  std::unique_ptr<Slot>& entry = slots_[seq];
  if (entry == nullptr) entry = std::make_unique<Slot>(size_);
  Slot& slot = *entry;
  slot.calls[rank] = call;
  ++slot.entered;

  // Phase 1: everyone arrives, or the collective fails for all.
  if (slot.failure.ok() && slot.entered == size_) {
    slot.all_arrived = true;
    slot.verdict = CheckCallsAgree(
        size_, [&](int r) -> const CallSignature& { return *slot.calls[r]; },
        seq, group_name_, name_rank);
    slot.all.reserve(size_);
    for (const std::optional<CollectiveCall>& c : slot.calls) {
      slot.all.push_back(*c);
    }
    slot.changed.notify_all();
  } else if (slot.failure.ok()) {
    const bool woken =
        WaitUntil(lock, slot.changed, world_->DeadlineFromNow(), [&] {
          return slot.all_arrived || !slot.failure.ok() || world_->aborted();
        });
    if (!slot.all_arrived && slot.failure.ok()) {
      if (woken) {
        slot.failure = world_->abort_status();
      } else {
        std::vector<std::string> missing;
        for (int r = 0; r < size_; ++r) {
          if (!slot.calls[r].has_value()) missing.push_back(name_rank(r));
        }
        slot.failure = absl::DeadlineExceededError(absl::StrCat(
            DescribeCall(call, seq, group_name_), ": ", name_rank(rank),
            " waited ", absl::FormatDuration(world_->timeout()), " but ",
            absl::StrJoin(missing, ", "), " did not arrive"));
      }
      slot.changed.notify_all();
    }
  }
  stats.wait_s += SecondsSince(arrival);
  if (!slot.all_arrived || !slot.verdict.ok()) {
    absl::Status status = slot.all_arrived ? slot.verdict : slot.failure;
    Exit(seq, slot);
    return status;
  }

  // Phase 2: this rank's share of the work. slot.all no longer changes, so
  // it is read without the lock.
  lock.Unlock();
  const Clock::time_point work_start = Clock::now();
  absl::Status work_status = work(slot.all);
  stats.copy_s += SecondsSince(work_start);

  // Phase 3: every rank's work is done before anyone reuses its buffers. No
  // deadline here: every rank has arrived and the work never blocks.
  const Clock::time_point done = Clock::now();
  lock.Lock();
  slot.work_status[rank] = std::move(work_status);
  if (++slot.finished == size_) {
    slot.changed.notify_all();
  } else {
    slot.changed.wait(lock.native(), [&] { return slot.finished == size_; });
  }
  absl::Status status;
  for (int r = 0; r < size_ && status.ok(); ++r) {
    if (!slot.work_status[r].ok()) {
      status = absl::Status(
          slot.work_status[r].code(),
          absl::StrCat(DescribeCall(call, seq, group_name_), ": ", name_rank(r),
                       ": ", slot.work_status[r].message()));
    }
  }
  Exit(seq, slot);
  stats.wait_s += SecondsSince(done);
  return status;
}

void Rendezvous::Exit(uint64_t seq, Slot& slot) {
  if (++slot.exited == size_) slots_.erase(seq);
}

void Rendezvous::WakeAll() {
  MutexLock lock(mu_);
  for (auto& [seq, slot] : slots_) slot->changed.notify_all();
}

}  // namespace tessera::executor::comm_internal
