// `tessera report ID`: the study as one self-contained HTML page
// (cli/report_html.h): the recommendation with every number labelled
// MEASURED or PREDICTED, the Pareto front, measured against predicted
// tokens/s, every trial, the calibration and the spec.
//
//   tessera report 7                    # writes tessera-study-7.html
//   tessera report 7 --out runs/7.html  # or --out - for standard output
//
// The file is written whole or not at all (a temporary file renamed into
// place). Exit status: kServiceExitStatusHelp (cli/planner_client.h); an
// output file that cannot be written is 1, with one line naming it.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera::cli {

// Runs `tessera report` with `args` (the arguments after "report").
int RunReport(const std::vector<std::string>& args, std::ostream& out,
              std::ostream& err);

}  // namespace tessera::cli
