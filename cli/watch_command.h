// `tessera watch ID`: follows a study on the planner (WatchStudy) until it
// ends, showing its progress (cli/study_progress.h) redrawn in place on a
// terminal or one line per event otherwise, then prints the final state and
// the recommendation (cli/recommendation_output.h). `tessera submit --wait`
// follows its study the same way.
//
//   tessera watch 7 [--planner HOST:PORT]
//
// Exit status: kServiceExitStatusHelp (cli/planner_client.h): 0 when the
// study is done, 4 when it ended cancelled or failed.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "cli/planner_client.h"

namespace tessera::cli {

// Runs `tessera watch` with `args` (the arguments after "watch").
int RunWatch(const std::vector<std::string>& args, std::ostream& out,
             std::ostream& err);

// Follows study `study_id` through `client` until it is final and prints
// the outcome; `redraw` draws the progress line in place (a terminal).
// `command` prefixes errors ("tessera watch"). A stream that breaks after it
// delivered events (a planner restarting) is resumed for up to
// `reconnect_for`. Returns the exit status.
int FollowStudy(PlannerClient& client, int64_t study_id, bool redraw,
                absl::Duration reconnect_for, absl::string_view command,
                std::ostream& out, std::ostream& err);

// Whether `out` is the process's standard output and that is a terminal.
bool IsTerminal(const std::ostream& out);

}  // namespace tessera::cli
