#include "executor/tessera_trial/trial_runner.h"

#include "absl/strings/str_cat.h"
#include "executor/tessera_trial/executor_backends.h"
#include "executor/trial/trial_records.h"
#include "executor/trial/trial_setup.h"

namespace tessera::executor {

TrialResult RunTrial(const TrialConfig& c) {
  const TrialResult r = NewTrialResult(c);
  if (absl::Status s = ValidateTrialConfig(c); !s.ok()) {
    return FailedResult(r, TrialStatus::kInvalid, s.message());
  }
  absl::StatusOr<const ExecutorBackend*> backend =
      FindExecutorBackend(c.backend, ExecutorCapability::kTrial);
  if (!backend.ok()) {
    return FailedResult(r, TrialStatus::kInvalid,
                        absl::StrCat("backend: ", backend.status().message()));
  }
  return (*backend)->run_trial(c);
}

}  // namespace tessera::executor
