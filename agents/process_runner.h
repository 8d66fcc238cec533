// Runs a set of child processes to their end under one time limit: what the
// agent does with the tessera-trial processes of one trial (one, or one per
// local rank) and with a probe run. Each process leads its own process group
// (process.h). Past the time limit, or when the caller asks to stop, every
// group gets SIGTERM and, after a grace, SIGKILL; when one process fails (a
// non-zero exit or a signal), the others get a grace to finish (to write
// their own result) and are then killed the same way. Once a process has
// ended, its group is killed too, so no grandchild outlives the run.
//
//   RunLimits limits;
//   limits.time_limit = absl::Seconds(60);
//   TESSERA_ASSIGN_OR_RETURN(std::vector<ProcessOutcome> outcomes,
//                            RunProcesses(specs, limits, [&] {
//                              return cancelled.load(); }));
//   // outcomes[i].kill == KillReason::kTimeLimit when the limit struck
#pragma once

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agents/process.h"

namespace tessera::agents {

struct RunLimits {
  // For the whole set, from the start of the first process.
  absl::Duration time_limit = absl::InfiniteDuration();
  // Between SIGTERM and SIGKILL.
  absl::Duration kill_grace = absl::Seconds(5);
  // How long the others may run on after one process failed.
  absl::Duration after_failure_grace = absl::InfiniteDuration();
  // How often the processes and `should_stop` are checked.
  absl::Duration poll_interval = absl::Milliseconds(20);
};

// Why the runner signalled a process (kNone: it ended on its own).
enum class KillReason {
  kNone,
  kTimeLimit,   // the set ran past RunLimits::time_limit
  kStopped,     // should_stop() returned true
  kPeerFailed,  // another process of the set failed first
};

struct ProcessOutcome {
  ExitStatus exit;
  KillReason kill = KillReason::kNone;
  absl::Duration elapsed;  // from its start to its end
};

// Starts every spec, then waits until all have ended, enforcing `limits`;
// `should_stop` (may be empty) is polled every poll_interval. `registry`
// (may be null) holds each live group while it runs. Outcomes are in the
// order of `specs`. When one spec cannot be started, the processes already
// started are killed and the error returned.
absl::StatusOr<std::vector<ProcessOutcome>> RunProcesses(
    const std::vector<ProcessSpec>& specs, const RunLimits& limits,
    const std::function<bool()>& should_stop,
    ProcessGroupRegistry* registry = nullptr);

}  // namespace tessera::agents
