// What a study's trial backend can run of its training stack, checked at
// submission. The command backend runs the study's own stack (the user's
// framework), so:
//   - the stack must not be "tessera" (that is Tessera's executor: backend
//     cpu or cuda), and
//   - the command template must pass every layout field the stack varies
//     ({tp} when it has tensor parallelism, {zero} when it has more than one
//     ZeRO stage, {micro_batch} always, ...), or {config} (the file holding
//     them all): a field the command never sees would make every trial run
//     one layout under the names of many, a silent wrong answer.
//
//   TESSERA_RETURN_IF_ERROR(CheckTrialBackendRunsStack(checked.trials,
//                                                      checked.workload));
#pragma once

#include "absl/status/status.h"
#include "core/workload.h"
#include "service/trial_options.h"

namespace tessera::service {

// OK when the trials of `options` can run `workload`'s stack as planned.
// INVALID_ARGUMENT naming "study.training.stack" or "study.trials.command".
absl::Status CheckTrialBackendRunsStack(const TrialOptions& options,
                                        const Workload& workload);

}  // namespace tessera::service
