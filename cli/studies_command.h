// `tessera studies`: the planner's studies as a table (id, name, state,
// model, GPU, GPUs, trials done of total, running, best tokens/s and its
// layout, last update, why it ended), CSV or a JSON array
// (cli/service_json.h).
//
//   tessera studies [--state running] [--model llama2-7b] [--gpu h100-sxm]
//       [--limit N] [-o table|wide|json|csv]
//
// Exit status: kServiceExitStatusHelp (cli/planner_client.h).
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "tessera/v1/service.pb.h"

namespace tessera::cli {

// Runs `tessera studies` with `args` (the flags after "studies").
int RunStudies(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err);

// The table `tessera studies` prints; lines fit `max_width` characters
// (cutting the name, layout and reason, then dropping the least important
// columns) when it is not 0 (every column).
void PrintStudyTable(const v1::ListStudiesResponse& studies, std::ostream& out,
                     size_t max_width = 0);

// The studies as CSV (-o csv): id, name, state, model, gpu, gpus,
// trials_done, trials_total, trials_running, best_tokens_per_s (empty when
// none was measured), best_layout, updated, reason.
void PrintStudyCsv(const v1::ListStudiesResponse& studies, std::ostream& out);

}  // namespace tessera::cli
