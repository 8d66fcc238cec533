// Input checks shared by every TrialStore implementation: they run before a
// store touches its database, so a bad request changes nothing. Each returns
// InvalidArgument naming the field ("study.nodes: must be >= 1, got 0").
//
//   TESSERA_RETURN_IF_ERROR(ValidateNewStudy(study));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "db/trial_store.h"

namespace tessera::db {

absl::Status ValidateNewStudy(const NewStudy& study);
// `field` names the trial in messages, e.g. "trials[3]".
absl::Status ValidateNewTrial(const NewTrial& trial, absl::string_view field);
// Letters, digits and . _ : - , 1 to 128 characters.
absl::Status ValidateAgentId(absl::string_view id, absl::string_view field);
// Agent ids of a lease: at least one, each valid, no repeats.
absl::Status ValidateLeaseAgents(const std::vector<std::string>& agent_ids);
// The registration of an agent; an empty id is allowed (the store assigns).
absl::Status ValidateAgentRegistration(const AgentRegistration& agent);
absl::Status ValidateProbe(const Probe& probe, absl::string_view field);
absl::Status ValidateCalibration(const Calibration& calibration);
// A gpu name and a file text that is a JSON object.
absl::Status ValidateImportedCalibration(const ImportedCalibration& imported);
// `field` prefixes the errors ("collective_samples[2]").
absl::Status ValidateCollectiveSample(const CollectiveSample& sample,
                                      absl::string_view field);
absl::Status ValidateTrialFilter(const TrialFilter& filter);
absl::Status ValidateStudyFilter(const StudyFilter& filter);
// True when `text` parses as one JSON value.
bool IsJson(absl::string_view text);
// An agent id made from a hostname (characters outside the id alphabet
// become '-'); "agent" for an empty one.
std::string AgentIdBase(absl::string_view hostname);

}  // namespace tessera::db
