// One leased cluster probe (service/cluster_probe.h), run on this
// agent: one `tessera-trial --probe-collectives` process per local rank
// (global rank node_rank * ranks_per_node + local) in a fresh folder, the
// rendezvous relayed through the planner when the probe spans agents, the
// agent's time limit over them, and, on node rank 0, the sweep global rank
// 0 wrote as the report (or {"collectives": [], "error": ...} saying why
// there is none: the planner then queues the probe again or drops it).
//
//   CollectiveProbeOutcome out = RunCollectiveProbeAssignment(a, options,
//                                                             should_stop);
//   if (out.report) planner.ReportCollectiveProbe(id, a.collective_probe_id(),
//                                                  out.result_json);
#pragma once

#include <functional>
#include <string>

#include "agents/trial_execution.h"
#include "tessera/v1/service.pb.h"

namespace tessera::agents {

struct CollectiveProbeOutcome {
  bool report = false;      // node rank 0 with a result to report
  std::string result_json;  // the sweep, or {"collectives": [], "error"}
  std::string summary;      // one line for the log
  std::string work_dir;     // "" when none was made
  bool ok = false;          // the sweep has figures
};

// Runs the probe `a` (a.collective_probe_id() > 0) to its end; options as
// for trials. `should_stop` (may be empty) ends it early: the agent stops.
CollectiveProbeOutcome RunCollectiveProbeAssignment(
    const v1::TrialAssignment& a, const TrialExecutionOptions& options,
    const std::function<bool()>& should_stop);

}  // namespace tessera::agents
