// `tessera history`: what every study measured, grouped by layout
// (cli/trial_history.h): ListTrials across all studies with the filters of
// `tessera trials`, one row per model, GPU, GPU count and layout with its
// trials, best and median tokens/s, MFU, watts and tokens/J, best first.
// Answers "what did 8-way TP on these nodes give last month":
//
//   tessera history --tp 8 --gpu h100-sxm --since 30d [--json | --csv]
//
// Exit status: kServiceExitStatusHelp (cli/planner_client.h).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera::cli {

// Runs `tessera history` with `args` (the flags after "history").
int RunHistory(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err);

}  // namespace tessera::cli
