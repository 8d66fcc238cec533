#include "core/trial_time_budget.h"

namespace tessera {

absl::Duration TrialCommTimeout(double time_limit_s, absl::Duration fallback) {
  return time_limit_s > 0 ? absl::Seconds(time_limit_s) : fallback;
}

absl::Duration TrialWatchdogAfter(double time_limit_s) {
  if (!(time_limit_s > 0)) return absl::InfiniteDuration();
  return absl::Seconds(time_limit_s * 1.1 + 5.0);
}

absl::Duration TrialKillAfter(double time_limit_s) {
  if (!(time_limit_s > 0)) return absl::InfiniteDuration();
  return TrialWatchdogAfter(time_limit_s) + absl::Seconds(5);
}

}  // namespace tessera
