// What `tessera plan` prints about the GPU count (costmodel/search/
// scale_search.h): each count's best layout for the objective with its
// tokens/s per GPU, watts per GPU, days, MWh and GPU-hours; the front of
// time against energy across counts; what the last GPUs buy, in words; why
// the energy-optimal count uses fewer GPUs; the chosen count and what
// happens to the GPUs it leaves unused.
//
//   PrintScale(workload, scale, options, std::cout);
//   json["scale"] = ScaleJson(workload, scale, options);
//
// JSON shape:
//   {"objective", "deadline_days": d|null, "charge_idle_gpus",
//    "cluster_nodes", "cluster_gpus", "elapsed_ms",
//    "counts": [{"nodes", "gpus", "skipped": "..."|null, "searched",
//                "feasible", "best": S|null}],
//    "front": [S...], "chosen": S|null, "meets_deadline",
//    "marginal": [{"more_gpus", "fewer_gpus", "time_saved_fraction",
//                  "extra_energy_fraction", "extra_gpu_hours_fraction",
//                  "text"}]}
//   S = {"nodes", "gpus", "layout": {...}, "tokens_per_s",
//        "tokens_per_s_per_gpu", "watts_per_gpu", "joules_per_token",
//        "idle_joules_per_token", "gpu_seconds_per_token",
//        "full_run": {"days", "energy_mwh", "gpu_hours"} (with a budget)}
#pragma once

#include <ostream>
#include <vector>

#include "core/workload.h"
#include "nlohmann/json.hpp"
#include "costmodel/search/scale_search.h"

namespace tessera::cli {

nlohmann::json ScalePointJson(const costmodel::ScalePoint& point);
nlohmann::json ScaleJson(const Workload& workload,
                         const costmodel::ScaleResult& scale,
                         const costmodel::ScaleOptions& options);

// The GPU count section of `tessera plan` (`workload` is the whole
// cluster's).
void PrintScale(const Workload& workload, const costmodel::ScaleResult& scale,
                const costmodel::ScaleOptions& options, std::ostream& out);

// `tessera predict`'s neighbours: one layout at each count (costmodel::
// LayoutAcrossCounts), GPUs, dp, gradient accumulation, tokens/s and watts
// per GPU, the run's days, MWh and GPU-hours, and what the last GPUs buy.
void PrintLayoutAcrossCounts(const Workload& workload,
                             const std::vector<costmodel::ScalePoint>& points,
                             std::ostream& out);

}  // namespace tessera::cli
