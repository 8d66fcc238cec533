// Which registered agents can run what, read from the store: both sides of
// the planner ask it (a study, to size its rungs and say what it waits for;
// leasing, to find an agent's gang).
//
//   TESSERA_ASSIGN_OR_RETURN(std::vector<db::Agent> able,
//                            SuitableAgents(store, "cuda", 8));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "db/trial_store.h"

namespace tessera::service {

// Whether `agent` runs trials of `backend`: its own, or, for "" (cpu or
// cuda), any backend of Tessera's executor (a command agent needs a study's
// command).
bool ServesBackend(const db::Agent& agent, absl::string_view backend);

// INVALID_ARGUMENT "agent_id: required" for "", else OK: every call an
// agent makes names it.
absl::Status RequireAgentId(absl::string_view agent_id);

// The agent, if registered and active; INVALID_ARGUMENT "agent_id: required"
// for "", FAILED_PRECONDITION when it was marked gone.
absl::StatusOr<db::Agent> ActiveAgent(db::TrialStore& store,
                                      absl::string_view agent_id);

// Active agents of `backend` ("" any Tessera backend) offering >= `ranks`
// ranks.
absl::StatusOr<std::vector<db::Agent>> SuitableAgents(db::TrialStore& store,
                                                      absl::string_view backend,
                                                      int64_t ranks);

// Empty when an active agent can run trials of `ranks` ranks on `backend`;
// else why not, naming what is registered: "no registered agent can run its
// trials: each needs 8 ranks on backend cuda; registered: a (cpu, 2 ranks).
// It waits for one ...".
absl::StatusOr<std::string> AgentShortage(db::TrialStore& store,
                                          absl::string_view backend,
                                          int64_t ranks);

}  // namespace tessera::service
