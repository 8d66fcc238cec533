// A tessera-trial result (core/trial_result.h) for a simulated agent's
// trial: ok, with a step time that depends on the layout only (so that a
// study's halving has something stable to rank), as JSON for ReportTrial.
#pragma once

#include <string>

#include "tessera/v1/service.pb.h"

namespace tessera::bench {

std::string SyntheticResultJson(const v1::TrialAssignment& assignment);

}  // namespace tessera::bench
