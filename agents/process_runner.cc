#include "agents/process_runner.h"

#include <signal.h>

#include <optional>
#include <utility>

namespace tessera::agents {
namespace {

// One process of the set while it runs.
struct Running {
  ChildProcess child;
  absl::Time started;
  ProcessOutcome outcome;
  bool done = false;
  std::optional<absl::Time> kill_after;  // SIGKILL due (SIGTERM was sent)
};

// Keeps the registry in step with the live groups on every path.
class Registration {
 public:
  Registration(ProcessGroupRegistry* registry, pid_t group)
      : registry_(registry), group_(group) {
    if (registry_ != nullptr) registry_->Add(group_);
  }
  ~Registration() { Release(); }
  Registration(Registration&& other) noexcept
      : registry_(std::exchange(other.registry_, nullptr)),
        group_(other.group_) {}
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;
  Registration& operator=(Registration&&) = delete;
  void Release() {
    if (registry_ != nullptr) registry_->Remove(group_);
    registry_ = nullptr;
  }

 private:
  ProcessGroupRegistry* registry_;
  pid_t group_;
};

// Sends SIGTERM to a process not yet signalled, recording why.
void Terminate(Running& r, KillReason reason, absl::Time now,
               absl::Duration grace) {
  if (r.done || r.kill_after.has_value()) return;
  r.outcome.kill = reason;
  r.child.SignalGroup(SIGTERM);
  r.kill_after = now + grace;
}

}  // namespace

absl::StatusOr<std::vector<ProcessOutcome>> RunProcesses(
    const std::vector<ProcessSpec>& specs, const RunLimits& limits,
    const std::function<bool()>& should_stop, ProcessGroupRegistry* registry) {
  std::vector<Running> running;
  std::vector<Registration> registrations;
  running.reserve(specs.size());
  registrations.reserve(specs.size());
  const absl::Time start = absl::Now();
  for (const ProcessSpec& spec : specs) {
    // On failure the children already started die with `running`
    // (ChildProcess kills and reaps its group).
    absl::StatusOr<ChildProcess> child = ChildProcess::Start(spec);
    if (!child.ok()) return child.status();
    registrations.emplace_back(registry, child->pid());
    running.push_back(Running{std::move(*child), absl::Now(), {}, false, {}});
  }
  const absl::Time deadline = start + limits.time_limit;
  std::optional<absl::Time> peers_deadline;  // after a failure
  size_t remaining = running.size();
  while (remaining > 0) {
    const absl::Time now = absl::Now();
    for (size_t i = 0; i < running.size(); ++i) {
      Running& r = running[i];
      if (r.done) continue;
      std::optional<ExitStatus> exit = r.child.Poll();
      if (!exit.has_value()) continue;
      r.done = true;
      --remaining;
      r.outcome.exit = *exit;
      r.outcome.elapsed = now - r.started;
      r.child.SignalGroup(SIGKILL);  // whatever it left behind
      registrations[i].Release();
      if (!exit->success() && !peers_deadline.has_value()) {
        peers_deadline = now + limits.after_failure_grace;
      }
    }
    const bool stop = should_stop && should_stop();
    for (Running& r : running) {
      if (r.done) continue;
      if (now >= deadline) {
        Terminate(r, KillReason::kTimeLimit, now, limits.kill_grace);
      } else if (stop) {
        Terminate(r, KillReason::kStopped, now, limits.kill_grace);
      } else if (peers_deadline.has_value() && now >= *peers_deadline) {
        Terminate(r, KillReason::kPeerFailed, now, limits.kill_grace);
      }
      if (r.kill_after.has_value() && now >= *r.kill_after) {
        r.child.SignalGroup(SIGKILL);
      }
    }
    if (remaining > 0) absl::SleepFor(limits.poll_interval);
  }
  std::vector<ProcessOutcome> outcomes;
  outcomes.reserve(running.size());
  for (Running& r : running) outcomes.push_back(r.outcome);
  return outcomes;
}

}  // namespace tessera::agents
