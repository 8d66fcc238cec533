// `tessera explain LAYOUT`: one layout's full account for a workload: where
// it ranks among every feasible layout, its step part by part, its memory
// by what holds it against the usable memory and the headroom, its
// communication, power and full run, and what separates it from the best
// layout, with whether the cost model can tell the two apart.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera::cli {

// Runs `tessera explain` with `args` (what follows "explain"), printing to
// `out` and one-line errors to `err`; returns the exit status (0 also for
// an infeasible layout: the output says why).
int RunExplain(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err);

}  // namespace tessera::cli
