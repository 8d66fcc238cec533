// A trial's time budget and every layer that enforces it, in one place. A
// trial may take `time_limit_s` (the study's trial option; 0: no limit):
//   1. the step loop starts no step past the limit and reports `timeout`
//      (TrialDeadline, executor/trial/trial_setup.h);
//   2. every rendezvous and collective wait of the trial's communicators
//      gives up at the limit (TrialCommTimeout), so a peer that died does
//      not hold the others;
//   3. tessera-trial's watchdog, for a step that never returns (a hung
//      kernel or collective cannot be interrupted), writes a `timeout`
//      result and ends the process at TrialWatchdogAfter = 1.1 x limit + 5 s;
//   4. the agent kills a trial process still running at TrialKillAfter =
//      the watchdog's + 5 s, and reports what it left or a timeout
//      (agents/trial_execution.h).
// Each layer fires after the one inside it, so the innermost layer that can
// still answer is the one that does, with the most precise result.
//
//   options.timeout = TrialCommTimeout(c.time_limit_s, options.timeout);
#pragma once

#include "absl/time/time.h"

namespace tessera {

// Layer 2: the communicators' timeout, `fallback` without a limit.
absl::Duration TrialCommTimeout(double time_limit_s, absl::Duration fallback);

// Layer 3: when tessera-trial's watchdog ends a trial that has not returned;
// InfiniteDuration without a limit.
absl::Duration TrialWatchdogAfter(double time_limit_s);

// Layer 4: when the agent kills the trial's processes; InfiniteDuration
// without a limit.
absl::Duration TrialKillAfter(double time_limit_s);

}  // namespace tessera
