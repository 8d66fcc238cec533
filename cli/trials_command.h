// `tessera trials`: the planner's trials (ListTrials) with filters (study,
// state, model, GPU, layout fields, a time range), sorted by the planner,
// as a table (cli/trial_table.h), JSON (cli/service_json.h) or CSV.
//
//   tessera trials --study 7 --state ok,oom --sort -tokens_per_s
//   tessera trials --tp 8 --gpu h100-sxm --since 30d --csv > tp8.csv
//
// Exit status: kServiceExitStatusHelp (cli/planner_client.h).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera::cli {

// Runs `tessera trials` with `args` (the flags after "trials").
int RunTrials(const std::vector<std::string>& args, std::ostream& out,
              std::ostream& err);

}  // namespace tessera::cli
