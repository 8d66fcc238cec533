// `tessera replay`: how many trials the planner's study loop needs to find
// the best layout, measured on a sweep of real runs (replay/sweep_replay.h):
// the shipped loop beside the model's order, a random order and the naive
// rule, per group and overall (trials until within 1/2/5% of the group's
// best, trials wasted on failures, regret after k trials, the trials'
// cluster time).
//
//   tessera replay --sweep ../shared/data/usp_sweep.json
//   tessera replay --sweep runs.json --strategy study --strategy random -o json
//   tessera trials -o json > past.json && tessera replay --sweep past.json
//
// Exit status: cli/exit_codes.h.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera::cli {

int RunReplay(const std::vector<std::string>& args, std::ostream& out,
              std::ostream& err);

}  // namespace tessera::cli
