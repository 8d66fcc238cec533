// The largest (and smallest) value each number of a study spec may take
// (issue 28, "Spec bounds"): a spec is refused at submission, naming the
// field and its bound, before any check downstream can misread an absurd
// number (a trial_time_limit_s of 1e300 overflowed the agents' deadlines
// and timed every trial out at once; a total_tokens of 1e300 was taken).
// The bounds are far beyond any real run and plan: a week per trial, a
// year per study, 1e15 training tokens (Llama 3 used 1.56e13), a million
// nodes of 1024 GPUs, 16 M sequences of 16 M tokens.
//
//   TESSERA_RETURN_IF_ERROR(CheckSpecBounds(spec));
//   // INVALID_ARGUMENT "study.trials.trial_time_limit_s: at most 604800
//   // (seconds, a week), got 1e+300"
#pragma once

#include "absl/status/status.h"
#include "tessera/v1/specs.pb.h"

namespace tessera::service {

// OK when every number `spec` sets is finite and within its bound;
// INVALID_ARGUMENT naming the first that is not ("study.<field>: ...").
absl::Status CheckSpecBounds(const v1::StudySpec& spec);

}  // namespace tessera::service
