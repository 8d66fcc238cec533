// `tessera best ID`: the layout a study recommends for one objective
// (GetRecommendation): highest tokens/s (throughput, the default) or most
// tokens per joule (energy), with its numbers each labelled MEASURED or
// PREDICTED, the full run, why, and how well the calibration fits; or its
// JSON (cli/service_json.h's recommended layout, with the study's
// calibration and whether the recommendation is final).
//
//   tessera best 7 --objective energy [--json]
//
// Exit status: kServiceExitStatusHelp (cli/planner_client.h).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera::cli {

// Runs `tessera best` with `args` (the arguments after "best").
int RunBest(const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err);

}  // namespace tessera::cli
