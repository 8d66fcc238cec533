// What `tessera plan` and `tessera predict` print: one JSON object (--json),
// whose field names are part of the interface, or a table for people. The
// same printers serve a local search and a result from the planner service
// (proto/convert.h turns a PlanResponse back into a SearchResult).
//
//   costmodel::SearchResult r = *costmodel::SearchLayouts(w, {}, {});
//   std::cout << PlanJson(r).dump(2);   // {"searched": ..., "candidates":
//   [...]} PrintPlan(w, r, std::cout);         // the table and the best
//   layouts
//
// JSON shapes:
//   plan:    {"searched", "scored", "feasible", "elapsed_ms",
//             "candidates": [C...],
//             "best_throughput": C|null, "best_energy": C|null,
//             "pareto": [C...], "rejected": {"memory": n, ...}}
//            with C = {"layout": {...}, "prediction": P}, and, with an
//            uncertainty, "uncertainty": {"source", "model_log_sd",
//            "within_error_of_best": n} and in each C "step_time_interval_s":
//            [low, high] (one sd each side) and "within_error_of_best": bool
//   predict: {"layout": {...}, "feasible": bool, "reason": "...",
//             "prediction": P|null}, plus "memory_breakdown" when the layout
//             is infeasible for memory, and with an interval
//             "step_time_interval_s": [low, high], "uncertainty_source"
//   P = {"step_time_s", "tokens_per_s", "tokens_per_s_per_gpu",
//        "tflops_per_gpu", "mfu", "memory_gib_per_gpu", "memory_breakdown":
//        {"weights_bytes", ..., "total_bytes"}, "compute_s", "comm_s",
//        "exposed_comm_s", "bubble_s", "tp_comm_s", "pp_comm_s", "dp_comm_s",
//        "cp_comm_s", "tp_exposed_s", "pp_exposed_s", "dp_exposed_s",
//        "cp_exposed_s", "watts_per_gpu", "tokens_per_joule",
//        "full_run": {"days", "energy_mwh", "gpu_hours"} (with a token budget)}
//   Layouts are core/layout_json.h's objects.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

#include "core/workload.h"
#include "nlohmann/json.hpp"
#include "costmodel/fit/prediction_uncertainty.h"
#include "costmodel/prediction.h"
#include "costmodel/search/plan_uncertainty.h"
#include "costmodel/search/search.h"

namespace tessera::cli {

using costmodel::PlanUncertainty;  // costmodel/search/plan_uncertainty.h

nlohmann::json MemoryBreakdownJson(const costmodel::MemoryBreakdown& memory);
nlohmann::json PredictionJson(const costmodel::Prediction& prediction);
// {"layout": ..., "prediction": ...}
nlohmann::json CandidateJson(const costmodel::LayoutEvaluation& evaluation);
// `uncertainty` may be null (none known).
nlohmann::json PlanJson(const costmodel::SearchResult& result,
                        const PlanUncertainty* uncertainty = nullptr);
// `interval` may be null; `source` says where its spreads come from.
nlohmann::json PredictJson(const costmodel::LayoutEvaluation& evaluation,
                           const costmodel::StepTimeInterval* interval = nullptr,
                           const std::string& source = "");

// "llama2-7b (6.74B parameters) on 32 x 8 h100-sxm = 256 GPUs; global batch
// 512 x 4096 = 2097152 tokens per step", the stack and precision, and the
// memory headroom.
std::string DescribeWorkload(const Workload& workload);

// The search summary, the table of candidates (tokens/s, MFU, memory per GPU,
// exposed communication, bubble, watts, tokens/J), the best-throughput and
// best-energy layouts with the full run (days, MWh, GPU-hours) and the Pareto
// front; or why nothing is feasible. With `uncertainty`: the best layouts'
// step-time intervals and how many of the shown candidates are within the
// model's error of the best (those for trials to order). The top three are
// explained part by part (cli/layout_explanation.h).
// The candidates' table fits `max_width` characters (0: every column; see
// PrintCandidateTable).
void PrintPlan(const Workload& workload, const costmodel::SearchResult& result,
               std::ostream& out, const PlanUncertainty* uncertainty = nullptr,
               size_t max_width = 0);

// The ranked candidates of `workload` as a table: rank, the layout's knobs,
// step s, tokens/s, MFU (fp8 plans: "MFU fp8" over the fp8 peak beside "MFU
// bf16"), GiB/GPU, exposed comm s (the communication the step waits for;
// JSON's comm_s is all of it), bubble s, W/GPU, tokens/J. With `max_width` >
// 0 it fits that many characters: the knobs that are the same in every row
// leave the table for one line under it ("every row: vpp=1, cp=1"; a knob
// that varies always stays), then short titles, then the watts, bubble and
// MFU bf16 columns go.
void PrintCandidateTable(const Workload& workload,
                         const costmodel::SearchResult& result, std::ostream& out,
                         size_t max_width = 0);

// The model FLOPs utilisation over the peak of the workload's precision:
// `mfu_bf16` (over the dense bf16 peak) scaled to the fp8 peak for an fp8
// workload on a GPU with one, else `mfu_bf16`.
double PrecisionMfu(const Workload& workload, double mfu_bf16);

// `tessera plan -o csv`: a header and one line per candidate, best first
// (rank, the layout's knobs, step_time_s with its interval's low and high
// and within_error_of_best when `uncertainty` is known, tokens_per_s, ...,
// full_run_days, full_run_energy_mwh, full_run_gpu_hours); numbers in
// full, empty when not known.
void PrintPlanCsv(const costmodel::SearchResult& result,
                  const PlanUncertainty* uncertainty, std::ostream& out);

// `tessera predict -o csv`: a header and one line: feasible, reason, the
// layout's knobs and the prediction's numbers (empty for an infeasible
// layout, but its memory when known).
void PrintPredictionCsv(const costmodel::LayoutEvaluation& evaluation,
                        const costmodel::StepTimeInterval* interval,
                        std::ostream& out);

// One layout's prediction with its breakdown, or "infeasible: <reason>";
// with `interval`, the step time's interval and `source`.
void PrintPrediction(const Workload& workload,
                     const costmodel::LayoutEvaluation& evaluation,
                     std::ostream& out,
                     const costmodel::StepTimeInterval* interval = nullptr,
                     const std::string& source = "");

// JSON text as the commands print it: indented, invalid UTF-8 replaced.
std::string DumpJson(const nlohmann::json& json);

}  // namespace tessera::cli
