// What the service commands print with --json: the planner's studies,
// trials and recommendations as JSON objects whose field names are the
// .proto's (snake_case) and part of the interface. Numbers stay numbers
// (int64 too), enums are the words of cli/service_names.h, times are both
// *_unix_ms and RFC 3339 text, a number that was not measured is null, and
// layouts and predictions are the objects `tessera plan --json` prints.
//
//   std::cout << DumpJson(TrialJson(trial));
//
// Shapes:
//   study: {"id", "name", "state", "state_reason", "model", "gpu", "nodes",
//           "gpus_per_node", "gpus", "trials_total", "trials_done",
//           "trials_running", "best_layout": L|null, "best_tokens_per_s",
//           "created", "created_unix_ms", "updated", "updated_unix_ms"}
//   trial: {"id", "study_id", "rung", "state", "reason", "layout": L,
//           "warmup_steps", "steps", "gang_size", "attempts", "agents",
//           "model", "gpu", "created", "started", "finished" (text or null),
//           "created_unix_ms", "started_unix_ms", "finished_unix_ms",
//           "measured": M|null, "predicted": P|null}
//   M = {"steps", "step_time_median_s", "step_time_p10_s",
//        "step_time_p90_s", "tokens_per_s", "tokens_per_s_per_gpu",
//        "tflops_per_gpu", "mfu", "peak_memory_bytes", "compute_s", "comm_s",
//        "exposed_comm_s", "watts_per_gpu" (null: not measured),
//        "tokens_per_joule" (null: not measured), "loss": [...], "device",
//        "backend"}
//   recommended layout: {"layout": L, "provenance", "trial_id"|null,
//        "tokens_per_s", "tokens_per_joule"|null, "energy_provenance",
//        "mfu", "memory_gib_per_gpu", "exposed_comm_s", "bubble_s",
//        "step_time_s", "predicted": P|null, "full_run": {"days",
//        "energy_mwh", "gpu_hours"}|null, "why"}
//   recommendation: {"study_id", "final", "best_throughput": R|null,
//        "best_energy": R|null, "pareto": [R...], "calibration": {name:
//        value}, "calibration_mape", "calibration_samples", "history_db",
//        "gpu_name", "gpu": {"preset", "peak_dense_tflops", "memory_bytes",
//        ... as the message states them}|null}
//   with L = core/layout_json.h's object, P = cli/plan_output.h's prediction.
#pragma once

#include "nlohmann/json.hpp"
#include "tessera/v1/service.pb.h"

namespace tessera::cli {

// L: core's LayoutToJson of the layout, or its fields as they are when it
// is out of core's range.
nlohmann::json LayoutProtoJson(const v1::Layout& layout);
// The shapes above; a field the message does not set is null (or 0 where
// the .proto says 0 means none).
nlohmann::json StudyJson(const v1::StudySummary& study);
nlohmann::json TrialMetricsJson(const v1::TrialMetrics& metrics);
nlohmann::json TrialJson(const v1::Trial& trial);
// trial_id is null unless MEASURED; tokens_per_joule and energy_provenance
// are null when the planner has no energy figure (0).
nlohmann::json RecommendedLayoutJson(const v1::RecommendedLayout& layout);
nlohmann::json RecommendationJson(const v1::Recommendation& recommendation);

}  // namespace tessera::cli
