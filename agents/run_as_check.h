// Before a command agent runs anything as its run-as user
// (command_policy.h): proof, by trying, that the agent can start a process
// as that user and that such a process can neither read nor write the
// agent's secrets (its token file, its client key) nor its result spool.
// A command that could read the agent's token could act as the agent
// (lease trials, report fabricated results); one that could write the
// spool could change results before they are reported.
//
//   TESSERA_RETURN_IF_ERROR(CheckRunAsIsolation(
//       *policy.run_as, {"/etc/tessera/tls/token", spool_dir}));
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agents/command_policy.h"

namespace tessera::agents {

// OK when a process started as `user` (ProcessSpec::run_as) runs with the
// user's uid and finds none of `private_paths` readable or writable.
// FAILED_PRECONDITION naming the user and the first path it could reach,
// or saying that the agent cannot start processes as the user (it needs
// root, or CAP_SETUID and CAP_SETGID).
absl::Status CheckRunAsIsolation(const RunAsUser& user,
                                 const std::vector<std::string>& private_paths);

}  // namespace tessera::agents
