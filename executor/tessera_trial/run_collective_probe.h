// `tessera-trial --probe-collectives`: the collective sweep of
// executor/trial/collective_probe.h run by the backend the config names
// (executor_backends.h).
//
//   nlohmann::json out = RunCollectiveProbe(config);  // SweepToJson or "error"
#pragma once

#include "executor/trial/collective_probe.h"
#include "nlohmann/json.hpp"

namespace tessera::executor {

// The sweep's JSON (SweepToJson), or {"collectives": [], "error": "..."}
// naming what failed (a bad config, the rendezvous, a collective).
nlohmann::json RunCollectiveProbe(const CollectiveProbeConfig& config);

}  // namespace tessera::executor
