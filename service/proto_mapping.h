// The store's records as tessera.v1 messages and the list requests as store
// filters: what the PlannerService answers with; an agent's registration and
// probes as store records: what the AgentService takes.
//
//   TESSERA_ASSIGN_OR_RETURN(db::TrialFilter f, TrialFilterFromRequest(req));
//   for (const db::Trial& t : *store.ListTrials(f)) *out.add_trials() =
//       TrialToProto(t);
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "db/trial_store.h"
#include "tessera/v1/service.pb.h"

namespace tessera::service {

v1::TrialState TrialStateToProto(db::TrialState state);
// INVALID_ARGUMENT naming `field` for UNSPECIFIED or an unknown value.
absl::StatusOr<db::TrialState> TrialStateFromProto(v1::TrialState state,
                                                   absl::string_view field);
v1::StudyState StudyStateToProto(db::StudyStatus status);
absl::StatusOr<db::StudyStatus> StudyStateFromProto(v1::StudyState state,
                                                    absl::string_view field);

// Every field of the trial; the per-step losses come from its stored result.
v1::Trial TrialToProto(const db::Trial& trial);

// The study with its trial counts (by state) and its best measured trial.
v1::StudySummary StudySummaryOf(const db::Study& study,
                                const std::map<db::TrialState, int64_t>& counts,
                                const std::optional<db::Trial>& best);

// ListTrials' filters; limit 0 is 1000. sort: "" (creation order), a key of
// db::TrialSortKeys() or its short form ("created", "finished",
// "predicted_tokens_per_s" ...), "-" in front for descending.
// INVALID_ARGUMENT names the field ("sort: ...", "states[1]: ...").
absl::StatusOr<db::TrialFilter> TrialFilterFromRequest(
    const v1::ListTrialsRequest& request);

// ListStudies' filters; limit 0 is 100.
absl::StatusOr<db::StudyFilter> StudyFilterFromRequest(
    const v1::ListStudiesRequest& request);

// The agent as registered (cpu_ranks: its ranks on the cpu backend, else 0).
db::AgentRegistration AgentRegistrationFromProto(const v1::AgentInfo& agent);
std::vector<db::Probe> ProbesFromProto(const v1::ReportProbesRequest& request);

int64_t UnixMillis(absl::Time time);

}  // namespace tessera::service
