// An operator's correction: a finished trial whose result is wrong (a GPU that
// throttled, a node that shared its cores, a report later found bogus) is
// invalidated, and every calibration that was fitted with it is fitted again
// from the trials it kept (service/recalibration.h), so that the
// cost model forgets it. `tessera-planner --db FILE --invalidate-trial ID
// --reason TEXT` runs it, beside a serving planner or not (the store is
// SQLite's, shared safely); a serving planner's running studies pick the
// new calibrations up at their next refit, new studies at once.
//
//   TESSERA_ASSIGN_OR_RETURN(Invalidation done,
//       InvalidateTrialAndRecalibrate(store, 17, "GPU 3 throttled"));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "db/trial_store.h"

namespace tessera::service {

// What an invalidation changed: one line per calibration fitted again.
struct Invalidation {
  int64_t trial_id = 0;
  std::vector<std::string> recalibrated;  // "gpu:h100-sxm: 4 trials, ..."
};

// Marks `trial_id` invalid with `reason` (db::TrialStore::InvalidateTrial:
// its errors, and nothing changed) and fits each calibration whose latest
// version used it (as a sample or as an outlier) again from the other
// trials it names that are still ok, from the same prior a study's refit
// uses. A GPU's calibration that is left with fewer than
// kMinGpuCalibrationTrials consistent trials goes back to the prior (what
// the GPU is planned with before any trial); a study's with no trial left
// too. Store errors after the invalidation are returned (the trial stays
// invalid: running it again fits what is left again).
absl::StatusOr<Invalidation> InvalidateTrialAndRecalibrate(
    db::TrialStore& store, int64_t trial_id, absl::string_view reason);

}  // namespace tessera::service
