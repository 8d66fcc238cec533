// What each caller may do (issue 15, "Principals and roles"), checked by the
// two services before they call the planner. Who calls comes from the
// call's credentials (proto/principals.h CallerOf):
//
//   agent   AgentService only, and only as the agent id that is its name:
//           it registers, heartbeats, leases and reports as itself, never
//           for another agent's leases
//   user    PlannerService; cancels only the studies it submitted; no
//           command studies
//   command-user  a user who may also submit command studies
//   admin   PlannerService; cancels any study, imports calibrations,
//           submits command studies
//   anyone  a planner that does not tell callers apart (no TLS, or the one
//           shared --auth-token-file): everything
//
// Each returns OK or PERMISSION_DENIED naming the caller and what it may
// not do.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/principals.h"

namespace tessera::service {

// AgentService calls that name `agent_id`.
absl::Status MayActAsAgent(const Principal& caller, absl::string_view agent_id);

// PlannerService calls (`rpc` names the call in the refusal).
absl::Status MayUsePlannerService(const Principal& caller,
                                  absl::string_view rpc);

// What changes every study's predictions on a GPU (ImportCalibration):
// admins (and anyone on a planner that does not tell callers apart).
absl::Status MayChangeCalibrations(const Principal& caller,
                                   absl::string_view rpc);

// Submitting a study whose trials run its own command on the agents
// (backend "command"): command-users and admins (and anyone on a planner
// that does not tell callers apart; the agents' own command policies still
// decide what runs).
absl::Status MaySubmitCommandStudy(const Principal& caller);

// Cancelling study `study_id`, submitted by `owner` ("" when its
// submitter was not known: only an admin, or anyone on a planner that does
// not tell callers apart, may cancel it).
absl::Status MayCancelStudy(const Principal& caller, int64_t study_id,
                            absl::string_view owner);

}  // namespace tessera::service
