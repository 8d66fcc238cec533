// How Tessera's executor runs each trial backend: one row per backend with
// its trial and its collective sweep (core/trial_backend.h says what each
// backend's trials measure and how agents launch them). A backend is added
// here: a row naming its functions, compiled in when its toolkit is. A build
// without the toolkit keeps the row with null functions, so that asking for
// it says the build lacks it rather than that it does not exist.
//
//   TESSERA_ASSIGN_OR_RETURN(const ExecutorBackend* b,
//       FindExecutorBackend("cuda", ExecutorCapability::kTrial));
//   TrialResult r = b->run_trial(config);
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/trial_result.h"
#include "executor/trial/collective_probe.h"
#include "executor/trial/collective_sweep.h"
#include "executor/trial/trial_config.h"
#include "executor/tessera_trial/probes.h"

namespace tessera::executor {

struct ExecutorBackend {
  const char* name = "";  // "cpu", "cuda": core/trial_backend.h's names
  // A validated config's trial; null when this build lacks the backend.
  TrialResult (*run_trial)(const TrialConfig&) = nullptr;
  // This rank's collective sweep (collective_probe.h); null likewise.
  absl::StatusOr<std::vector<SweptCollective>> (*sweep_collectives)(
      const CollectiveProbeConfig&) = nullptr;
  // The hardware probes of `ranks` ranks (GEMM rate, copy and link
  // bandwidth: probes.h); null where the backend has none.
  std::vector<ProbeResult> (*run_probes)(int ranks) = nullptr;
};

// Every backend of the executor, in a fixed order.
const std::vector<ExecutorBackend>& ExecutorBackends();

// What a caller needs of a backend.
enum class ExecutorCapability { kTrial, kCollectiveSweep, kProbes };

// The backend called `name` that has `capability` in this build.
// INVALID_ARGUMENT "'x' is not cpu or cuda", "'cuda' is not part of this
// build" when its trial or sweep is null, "'cuda' probes are not part of
// this build" when its probes are.
absl::StatusOr<const ExecutorBackend*> FindExecutorBackend(
    absl::string_view name, ExecutorCapability capability);

}  // namespace tessera::executor
