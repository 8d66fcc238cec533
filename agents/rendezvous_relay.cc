#include "agents/rendezvous_relay.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "agents/files.h"

namespace tessera::agents {
namespace {

constexpr absl::Duration kEmptyAnswerPause = absl::Milliseconds(50);

// CANCELLED or DEADLINE_EXCEEDED when the relay must end, else OK.
absl::Status CheckContinue(const RelayControl& control, int64_t trial_id,
                           absl::string_view waiting_for) {
  if (control.should_stop && control.should_stop()) {
    return absl::CancelledError(
        absl::StrCat("trial ", trial_id, ": rendezvous relay stopped"));
  }
  if (absl::Now() >= control.deadline) {
    return absl::DeadlineExceededError(absl::StrCat(
        "trial ", trial_id, ": rendezvous: no ", waiting_for, " in time"));
  }
  return absl::OkStatus();
}

// Sleeps `delay`, cut short by the deadline.
void Pause(const RelayControl& control, absl::Duration delay) {
  absl::SleepFor(std::min(delay, control.deadline - absl::Now()));
}

}  // namespace

absl::Status PublishRendezvous(PlannerClient& planner,
                               absl::string_view agent_id, int64_t trial_id,
                               const std::string& file,
                               const RelayControl& control) {
  std::string data;
  while (true) {
    if (absl::Status s = CheckContinue(control, trial_id, "file from rank 0");
        !s.ok()) {
      return s;
    }
    // Written atomically by rank 0: present means complete.
    absl::StatusOr<std::string> content = ReadFile(file);
    if (content.ok() && !content->empty()) {
      data = std::move(*content);
      break;
    }
    Pause(control, control.file_poll_interval);
  }
  Backoff backoff(control.backoff);
  while (true) {
    absl::Status s = planner.PublishRendezvous(agent_id, trial_id, data,
                                               control.collective_probe_id);
    if (s.ok() || !IsRetryable(s)) return s;
    if (absl::Status c = CheckContinue(control, trial_id, "planner"); !c.ok()) {
      return c;
    }
    Pause(control, backoff.Next());
  }
}

absl::Status FetchRendezvous(PlannerClient& planner, absl::string_view agent_id,
                             int64_t trial_id, const std::string& file,
                             const RelayControl& control) {
  Backoff backoff(control.backoff);
  while (true) {
    if (absl::Status s =
            CheckContinue(control, trial_id, "data published by node rank 0");
        !s.ok()) {
      return s;
    }
    const absl::Duration wait =
        std::clamp(control.deadline - absl::Now(), absl::ZeroDuration(),
                   control.fetch_wait);
    absl::StatusOr<std::string> data = planner.FetchRendezvous(
        agent_id, trial_id, wait, control.collective_probe_id);
    if (data.ok() && !data->empty()) {
      return WriteFileAtomically(file, *data);
    }
    if (data.ok() || absl::IsDeadlineExceeded(data.status())) {
      // Not published yet (the planner answers DEADLINE_EXCEEDED when its
      // wait ran out); a planner that answers at once instead of waiting is
      // not asked in a tight loop.
      backoff.Reset();
      Pause(control, kEmptyAnswerPause);
      continue;
    }
    if (!IsRetryable(data.status())) return data.status();
    Pause(control, backoff.Next());
  }
}

RelayThread::RelayThread(bool relay, bool publish, PlannerClient* planner,
                         std::string agent_id, int64_t trial_id,
                         std::string file, RelayControl control) {
  if (!relay) return;
  if (planner == nullptr) {
    Finish(absl::FailedPreconditionError(
        "rendezvous: the lease spans agents but there is no planner"));
    return;
  }
  control.should_stop = [this] { return processes_done_.load(); };
  thread_ = std::thread([=, this] {
    Finish(publish
               ? PublishRendezvous(*planner, agent_id, trial_id, file, control)
               : FetchRendezvous(*planner, agent_id, trial_id, file, control));
  });
}

void RelayThread::Join() {
  processes_done_ = true;
  if (thread_.joinable()) thread_.join();
}

absl::Status RelayThread::status() const {
  absl::MutexLock lock(&mutex_);
  return status_;
}

void RelayThread::Finish(absl::Status s) {
  // CANCELLED: the processes ended first; DEADLINE_EXCEEDED: the time limit
  // stops them anyway.
  const bool fatal =
      !s.ok() && !absl::IsCancelled(s) && !absl::IsDeadlineExceeded(s);
  absl::MutexLock lock(&mutex_);
  status_ = std::move(s);
  if (fatal) failed_ = true;
}

}  // namespace tessera::agents
