// `tessera studies`: the planner's studies as a table (id, name, state,
// model, GPU, GPUs, trials done of total, running, best tokens/s and its
// layout, last update, why it ended) or a JSON array (cli/service_json.h).
//
//   tessera studies [--state running] [--model llama2-7b] [--gpu h100-sxm]
//       [--limit N] [--json]
//
// Exit status: kServiceExitStatusHelp (cli/planner_client.h).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "tessera/v1/service.pb.h"

namespace tessera::cli {

// Runs `tessera studies` with `args` (the flags after "studies").
int RunStudies(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err);

// The table `tessera studies` prints.
void PrintStudyTable(const v1::ListStudiesResponse& studies, std::ostream& out);

}  // namespace tessera::cli
