// The words the service commands use for the planner's enums and layouts,
// in tables, JSON and filters alike: study states (queued, running, done,
// cancelled, failed), trial states (queued, running, ok, oom, nan, timeout,
// crash, invalid, cancelled), provenance (MEASURED, PREDICTED) and layouts
// as compact `key=value` text that `tessera predict --layout` reads back.
//
//   StudyStateName(v1::STUDY_DONE);                  // "done"
//   ParseTrialStates("ok,oom");                       // {TRIAL_OK, TRIAL_OOM}
//   ParseTrialStates("failed");  // oom, nan, timeout, crash, invalid
//   CompactLayout(layout);       // "tp=2,dp=4,zero=3,micro_batch=2,
//                                //  grad_accum=8"
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tessera/v1/service.pb.h"

namespace tessera::cli {

// "queued", "running", "done", "cancelled", "failed"; "unknown" otherwise.
absl::string_view StudyStateName(v1::StudyState state);

// The inverse of StudyStateName (case-insensitive; the proto names such as
// STUDY_DONE too). INVALID_ARGUMENT listing the names otherwise.
absl::StatusOr<v1::StudyState> ParseStudyState(absl::string_view text);

// Whether a study in `state` has ended (done, cancelled or failed).
bool IsFinal(v1::StudyState state);

// "queued", "running" (leased to its agents), "ok", "oom", "nan",
// "timeout", "crash", "invalid", "cancelled"; "unknown" otherwise.
absl::string_view TrialStateName(v1::TrialState state);

// A comma-separated list of trial states: the names of TrialStateName,
// "leased" for running, "failed" for oom, nan, timeout, crash and invalid,
// "done" for every reported state (ok and the failures); case-insensitive,
// duplicates dropped, in first-given order. INVALID_ARGUMENT naming the bad
// word otherwise.
absl::StatusOr<std::vector<v1::TrialState>> ParseTrialStates(
    absl::string_view text);

// "MEASURED" or "PREDICTED"; "UNKNOWN" when unspecified.
absl::string_view ProvenanceName(v1::Provenance provenance);

// The layout's fields that differ from their defaults, as key=value pairs
// in core's field order and names (tp, sp, pp, vpp, cp, dp, zero,
// shard_group, micro_batch, grad_accum, recompute); dp and micro_batch are
// always given. ParseLayout reads it back.
std::string CompactLayout(const v1::Layout& layout);

// Every field, as core's FormatLayout writes it; CompactLayout when the
// layout is out of core's range.
std::string FullLayout(const v1::Layout& layout);

// The layout's recompute, "none" when empty.
std::string LayoutRecompute(const v1::Layout& layout);

}  // namespace tessera::cli
