// `tessera plan`: ranks every feasible parallel layout of a workload with the
// cost model, offline (no service, no GPU), and prints the table of the best
// ones, the best-throughput and best-energy layouts with the full run's days,
// MWh and GPU-hours, and the Pareto front; or one JSON object with --json.
//
//   tessera plan --model llama2-7b --gpu h100-sxm --nodes 32
//       --gpus-per-node 8 --global-batch 512 --seq-len 4096
//       --total-tokens 1e12 --top 10 [--json]
//   tessera plan --spec deploy/examples/study.json
//
// Exit status: cli/exit_codes.h (2 for bad input, 3 when nothing is
// feasible).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera::cli {

// Runs `tessera plan` with `args` (the flags after "plan"), printing results
// to `out` and one-line errors to `err`; returns the exit status.
int RunPlan(const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err);

}  // namespace tessera::cli
