// `tessera cancel ID`: cancels a study on the planner (CancelStudy): its
// queued trials are dropped, its running ones stopped at their agents'
// next heartbeat, and what was measured stays in the history.
//
//   tessera cancel 7
//   // study 7 cancelled: 3/12 trials done
//
// Exit status: kServiceExitStatusHelp (cli/planner_client.h).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera::cli {

// Runs `tessera cancel` with `args` (the arguments after "cancel").
int RunCancel(const std::vector<std::string>& args, std::ostream& out,
              std::ostream& err);

}  // namespace tessera::cli
