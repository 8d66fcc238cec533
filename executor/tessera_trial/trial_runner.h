// Runs one trial: warm-up steps, then measured steps, of real Llama training
// under a layout, and reports one TrialResult whatever happens (docs/architecture.md
// "A trial"). Failures become statuses, never crashes: a layout that does not
// fit the ranks or the model is `invalid`; an allocation past the memory limit
// is `oom`; a NaN or infinite loss is `nan`; passing the time limit is
// `timeout`; anything else is `crash` with the error.
//
//   TrialConfig config;  // model, layout, ranks, batch, steps ...
//   TrialResult result = RunTrial(config);
//   std::cout << TrialResultToJson(result).dump(2);
#pragma once

#include "core/trial_result.h"
#include "executor/trial/trial_config.h"

namespace tessera::executor {

// Runs the trial on the configured backend. The CPU backend runs the ranks as
// threads of this process over the in-process communicator.
TrialResult RunTrial(const TrialConfig& config);

}  // namespace tessera::executor
