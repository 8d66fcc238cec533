// `tessera predict`: the cost model's prediction for one layout of a
// workload (step time and its breakdown, throughput, MFU, memory per GPU,
// power, energy, the full run), or `infeasible: <reason>` when the layout
// does not resolve against the workload or does not fit in memory.
//
//   tessera predict --model llama2-7b --gpu h100-sxm --nodes 32
//       --gpus-per-node 8 --global-batch 512 --seq-len 4096
//       --layout tp=2,pp=1,vpp=1,cp=1,zero=3,micro_batch=2,recompute=none
//
// Exit status: cli/exit_codes.h (0 also when infeasible; 2 for bad input,
// including a malformed --layout).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera::cli {

// Runs `tessera predict` with `args` (the flags after "predict"), printing to
// `out` and one-line errors to `err`; returns the exit status.
int RunPredict(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err);

}  // namespace tessera::cli
