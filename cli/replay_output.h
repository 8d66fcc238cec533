// How `tessera replay` prints its report: a table per measure for people, the
// JSON contract scripts read, and an SVG of the regret curves.
//
// JSON: {"source", "seed", "noise_log_sd", "skipped": [...],
//        "strategies": [{"name": "study" | "model-order" | ...,
//          "summary": {...},
//          "groups": [{"group", "layouts", "best_tokens_per_s_per_gpu",
//            "trials_to_1pct": N|null, "trials_to_2pct": N|null,
//            "trials_to_5pct": N|null, "failed_trials": N, "trials": N,
//            "gpu_hours_to_2pct", "gpu_hours", "regret_after": [...],
//            "final_regret": x|null, and for the study strategies
//            "state", "reason", "recommended", "trial_log": [...],
//            "events": [the study's watch messages]}]}]}
#pragma once

#include <ostream>
#include <string>

#include "nlohmann/json.hpp"
#include "replay/sweep_replay.h"

namespace tessera::cli {

// The report as the JSON above.
nlohmann::json ReplayReportJson(const replay::SweepReplayReport& report);

// The report as tables fitting `width` columns (0: no limit); `trials`
// also lists each replayed study's trials.
void PrintReplayReport(const replay::SweepReplayReport& report, size_t width,
                       bool trials, std::ostream& out);

// The mean regret after k trials over the groups, one line per strategy.
std::string ReplayRegretSvg(const replay::SweepReplayReport& report);

}  // namespace tessera::cli
