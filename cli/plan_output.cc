#include "cli/plan_output.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/layout_explanation.h"
#include "cli/output_format.h"
#include "cli/text_table.h"
#include "core/layout_json.h"

namespace tessera::cli {
namespace {

// "rejected: memory 1200, layout.tp 300", most frequent first.
std::string DescribeRejected(const std::map<std::string, int64_t>& rejected) {
  std::vector<std::pair<std::string, int64_t>> kinds(rejected.begin(),
                                                     rejected.end());
  std::stable_sort(
      kinds.begin(), kinds.end(),
      [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (const auto& [kind, count] : kinds) {
    parts.push_back(absl::StrCat(kind, " ", count));
  }
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

std::string FullRunLine(const Workload& w, const planner::Prediction& p) {
  if (!p.full_run.has_value()) {
    return "full run: give --total-tokens (training.total_tokens) for days, "
           "MWh and GPU-hours";
  }
  return absl::StrFormat(
      "full run of %.3g tokens: %.2f days, %.1f MWh, %.0f GPU-hours",
      w.training.total_tokens, p.full_run->days, p.full_run->energy_mwh,
      p.full_run->gpu_hours);
}

// " (1.63-1.99 s at +-1 sd)".
std::string IntervalText(const planner::StepTimeInterval& i) {
  return absl::StrFormat(" (%.3f-%.3f s at +-1 sd)", i.low_s, i.high_s);
}

nlohmann::json IntervalJson(const planner::StepTimeInterval& i) {
  return nlohmann::json::array({i.low_s, i.high_s});
}

// The two summary lines of a best layout.
void PrintBest(absl::string_view title, const Workload& w,
               const planner::LayoutEvaluation& e,
               const planner::StepTimeInterval* interval, std::ostream& out) {
  const planner::Prediction& p = e.prediction;
  out << title << ": " << FormatLayout(e.layout) << "\n";
  out << absl::StrFormat(
      "  %.0f tokens/s (%.0f per GPU), step %.3f s%s, MFU %.1f%%, %.1f GiB "
      "per GPU, %.0f W per GPU, %.3f tokens/J\n",
      p.tokens_per_s, p.tokens_per_s_per_gpu, p.step_time_s,
      interval == nullptr ? "" : IntervalText(*interval), 100 * p.mfu,
      p.memory_gib_per_gpu, p.watts_per_gpu, p.tokens_per_joule);
  out << "  " << FullRunLine(w, p) << "\n";
}

}  // namespace

nlohmann::json MemoryBreakdownJson(const planner::MemoryBreakdown& m) {
  return nlohmann::json{{"weights_bytes", m.weights_bytes},
                        {"master_weights_bytes", m.master_weights_bytes},
                        {"gradients_bytes", m.gradients_bytes},
                        {"optimizer_bytes", m.optimizer_bytes},
                        {"activations_bytes", m.activations_bytes},
                        {"logits_bytes", m.logits_bytes},
                        {"gathered_params_bytes", m.gathered_params_bytes},
                        {"overhead_bytes", m.overhead_bytes},
                        {"total_bytes", m.total_bytes}};
}

nlohmann::json PredictionJson(const planner::Prediction& p) {
  nlohmann::json j{{"step_time_s", p.step_time_s},
                   {"tokens_per_s", p.tokens_per_s},
                   {"tokens_per_s_per_gpu", p.tokens_per_s_per_gpu},
                   {"tflops_per_gpu", p.tflops_per_gpu},
                   {"mfu", p.mfu},
                   {"memory_gib_per_gpu", p.memory_gib_per_gpu},
                   {"memory_breakdown", MemoryBreakdownJson(p.memory)},
                   {"compute_s", p.compute_s},
                   {"comm_s", p.comm_s},
                   {"exposed_comm_s", p.exposed_comm_s},
                   {"bubble_s", p.bubble_s},
                   {"tp_comm_s", p.tp_comm_s},
                   {"pp_comm_s", p.pp_comm_s},
                   {"dp_comm_s", p.dp_comm_s},
                   {"cp_comm_s", p.cp_comm_s},
                   {"tp_exposed_s", p.tp_exposed_s},
                   {"pp_exposed_s", p.pp_exposed_s},
                   {"dp_exposed_s", p.dp_exposed_s},
                   {"cp_exposed_s", p.cp_exposed_s},
                   {"watts_per_gpu", p.watts_per_gpu},
                   {"tokens_per_joule", p.tokens_per_joule}};
  if (p.full_run.has_value()) {
    j["full_run"] = {{"days", p.full_run->days},
                     {"energy_mwh", p.full_run->energy_mwh},
                     {"gpu_hours", p.full_run->gpu_hours}};
  }
  return j;
}

nlohmann::json CandidateJson(const planner::LayoutEvaluation& e) {
  return nlohmann::json{{"layout", LayoutToJson(e.layout)},
                        {"prediction", PredictionJson(e.prediction)}};
}

nlohmann::json PlanJson(const planner::SearchResult& r,
                        const PlanUncertainty* u) {
  nlohmann::json candidates = nlohmann::json::array();
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    nlohmann::json c = CandidateJson(r.candidates[i]);
    if (u != nullptr && i < u->ranking.intervals.size()) {
      c["step_time_interval_s"] = IntervalJson(u->ranking.intervals[i]);
      c["within_error_of_best"] =
          static_cast<bool>(u->ranking.within_error_of_best[i]);
    }
    candidates.push_back(std::move(c));
  }
  nlohmann::json pareto = nlohmann::json::array();
  for (const planner::LayoutEvaluation& e : r.pareto) {
    pareto.push_back(CandidateJson(e));
  }
  nlohmann::json rejected = nlohmann::json::object();
  for (const auto& [kind, count] : r.rejected) rejected[kind] = count;
  const bool any = r.feasible > 0;
  nlohmann::json best_throughput =
      any ? CandidateJson(r.best_throughput) : nlohmann::json(nullptr);
  nlohmann::json best_energy =
      any ? CandidateJson(r.best_energy) : nlohmann::json(nullptr);
  nlohmann::json j{{"searched", r.searched},
                   {"scored", r.scored},
                   {"feasible", r.feasible},
                   {"elapsed_ms", r.elapsed_ms},
                   {"candidates", std::move(candidates)},
                   {"pareto", std::move(pareto)},
                   {"rejected", std::move(rejected)}};
  if (u != nullptr) {
    j["uncertainty"] = {
        {"source", u->spreads.source},
        {"model_log_sd", u->spreads.model_log_sd},
        {"within_error_of_best", u->ranking.within_error_count}};
    if (any) {
      best_throughput["step_time_interval_s"] =
          IntervalJson(u->best_throughput);
      best_energy["step_time_interval_s"] = IntervalJson(u->best_energy);
    }
  }
  j["best_throughput"] = std::move(best_throughput);
  j["best_energy"] = std::move(best_energy);
  return j;
}

nlohmann::json PredictJson(const planner::LayoutEvaluation& e,
                           const planner::StepTimeInterval* interval,
                           const std::string& source) {
  nlohmann::json j{{"layout", LayoutToJson(e.layout)},
                   {"feasible", e.feasible},
                   {"reason", e.reason},
                   {"prediction", e.feasible ? PredictionJson(e.prediction)
                                             : nlohmann::json(nullptr)}};
  if (e.feasible && interval != nullptr) {
    j["step_time_interval_s"] = IntervalJson(*interval);
    j["uncertainty_source"] = source;
  }
  if (!e.feasible && e.prediction.memory.total_bytes > 0) {
    j["memory_breakdown"] = MemoryBreakdownJson(e.prediction.memory);
  }
  return j;
}

std::string DescribeWorkload(const Workload& w) {
  const TrainingConfig& t = w.training;
  return absl::StrFormat(
      "%s (%.2fB parameters) on %d x %d %s = %d GPUs; global batch %d x %d = "
      "%d tokens per step\ntraining stack %s%s%s, %s\nmemory headroom: %s\n"
      "MFU: model FLOPs (no recomputation) per second over %s's dense bf16 "
      "peak, %.0f TFLOP/s per GPU",
      w.model.name, w.model.ParamCount() / 1e9, w.cluster.nodes,
      w.cluster.gpus_per_node, w.cluster.gpu.name, w.cluster.world_size(),
      t.global_batch, t.seq_len, t.tokens_per_step(), t.stack,
      t.stack == kDefaultTrainingStack ? " (the default; --stack to change)"
                                       : "",
      t.stack_options.empty()
          ? ""
          : absl::StrCat(" with ", absl::StrJoin(t.stack_options, ",")),
      PrecisionName(t.precision), DescribeMemoryHeadroom(w.cluster),
      w.cluster.gpu.name, w.cluster.gpu.peak_dense_tflops);
}

// The candidates `tessera plan` explains part by part.
constexpr int64_t kExplainedCandidates = 3;

void PrintCandidateTable(const planner::SearchResult& r, std::ostream& out,
                         size_t max_width) {
  // Too wide for max_width: short titles, then the watts, bubble, gradient
  // accumulation, sp, vpp, cp and shard group columns go, in that order.
  TextTable table({{"rank", kRight},
                   {"tp", kRight},
                   TableColumn("sp", kRight).Drop(4),
                   {"pp", kRight},
                   TableColumn("vpp", kRight).Drop(5),
                   TableColumn("cp", kRight).Drop(6),
                   {"dp", kRight},
                   {"zero", kRight},
                   TableColumn("shard", kRight).Drop(7),
                   {"mb", kRight},
                   TableColumn("ga", kRight).Drop(3),
                   TableColumn("recompute").Short("recomp"),
                   {"step s", kRight},
                   {"tokens/s", kRight},
                   {"MFU", kRight},
                   TableColumn("GiB/GPU", kRight).Short("GiB"),
                   TableColumn("exposed s", kRight).Short("comm s"),
                   TableColumn("bubble s", kRight).Drop(2).Short("bub s"),
                   TableColumn("W/GPU", kRight).Drop(1).Short("W"),
                   TableColumn("tokens/J", kRight).Short("tok/J")});
  int rank = 0;
  for (const planner::LayoutEvaluation& e : r.candidates) {
    const Layout& l = e.layout;
    const planner::Prediction& p = e.prediction;
    table.AddRow({absl::StrCat(++rank),
                  absl::StrCat(l.tp),
                  absl::StrCat(l.sp ? 1 : 0),
                  absl::StrCat(l.pp),
                  absl::StrCat(l.vpp),
                  absl::StrCat(l.cp),
                  absl::StrCat(l.dp),
                  absl::StrCat(l.zero),
                  absl::StrCat(l.shard_group),
                  absl::StrCat(l.micro_batch),
                  absl::StrCat(l.grad_accum),
                  std::string(RecomputeName(l.recompute)),
                  absl::StrFormat("%.3f", p.step_time_s),
                  absl::StrFormat("%.0f", p.tokens_per_s),
                  absl::StrFormat("%.1f%%", 100 * p.mfu),
                  absl::StrFormat("%.1f", p.memory_gib_per_gpu),
                  absl::StrFormat("%.3f", p.exposed_comm_s),
                  absl::StrFormat("%.3f", p.bubble_s),
                  absl::StrFormat("%.0f", p.watts_per_gpu),
                  absl::StrFormat("%.3f", p.tokens_per_joule)});
  }
  table.Print(out, max_width);
}

void PrintPlanCsv(const planner::SearchResult& r, const PlanUncertainty* u,
                  std::ostream& out) {
  out << CsvLine({"rank",
                  "tp",
                  "sp",
                  "pp",
                  "vpp",
                  "cp",
                  "dp",
                  "zero",
                  "shard_group",
                  "micro_batch",
                  "grad_accum",
                  "recompute",
                  "step_time_s",
                  "step_time_low_s",
                  "step_time_high_s",
                  "within_error_of_best",
                  "tokens_per_s",
                  "tokens_per_s_per_gpu",
                  "tflops_per_gpu",
                  "mfu",
                  "memory_gib_per_gpu",
                  "compute_s",
                  "exposed_comm_s",
                  "bubble_s",
                  "watts_per_gpu",
                  "tokens_per_joule",
                  "full_run_days",
                  "full_run_energy_mwh",
                  "full_run_gpu_hours"});
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const Layout& l = r.candidates[i].layout;
    const planner::Prediction& p = r.candidates[i].prediction;
    const bool interval = u != nullptr && i < u->ranking.intervals.size() &&
                          i < u->ranking.within_error_of_best.size();
    auto number = [](bool known, double value) {
      return CsvNumber(known ? std::optional<double>(value) : std::nullopt);
    };
    const bool full = p.full_run.has_value();
    out << CsvLine({
        absl::StrCat(i + 1),
        absl::StrCat(l.tp),
        absl::StrCat(l.sp ? 1 : 0),
        absl::StrCat(l.pp),
        absl::StrCat(l.vpp),
        absl::StrCat(l.cp),
        absl::StrCat(l.dp),
        absl::StrCat(l.zero),
        absl::StrCat(l.shard_group),
        absl::StrCat(l.micro_batch),
        absl::StrCat(l.grad_accum),
        std::string(RecomputeName(l.recompute)),
        CsvNumber(p.step_time_s),
        number(interval, interval ? u->ranking.intervals[i].low_s : 0),
        number(interval, interval ? u->ranking.intervals[i].high_s : 0),
        interval ? (u->ranking.within_error_of_best[i] ? "true" : "false") : "",
        CsvNumber(p.tokens_per_s),
        CsvNumber(p.tokens_per_s_per_gpu),
        CsvNumber(p.tflops_per_gpu),
        CsvNumber(p.mfu),
        CsvNumber(p.memory_gib_per_gpu),
        CsvNumber(p.compute_s),
        CsvNumber(p.exposed_comm_s),
        CsvNumber(p.bubble_s),
        CsvNumber(p.watts_per_gpu),
        CsvNumber(p.tokens_per_joule),
        number(full, full ? p.full_run->days : 0),
        number(full, full ? p.full_run->energy_mwh : 0),
        number(full, full ? p.full_run->gpu_hours : 0),
    });
  }
}

void PrintPlan(const Workload& w, const planner::SearchResult& r,
               std::ostream& out, const PlanUncertainty* u, size_t max_width) {
  out << DescribeWorkload(w) << "\n";
  out << absl::StrFormat(
      "searched %d layouts in %.1f ms (%d costed): %d "
      "feasible; rejected: %s\n",
      r.searched, r.elapsed_ms, r.scored, r.feasible,
      DescribeRejected(r.rejected));
  if (r.feasible == 0 || r.candidates.empty()) {
    out << "no feasible layout for this workload\n";
    return;
  }
  out << "\n";
  PrintCandidateTable(r, out, max_width);
  out << "\n";
  if (u != nullptr) {
    const int64_t shown = static_cast<int64_t>(r.candidates.size());
    const int64_t tied = u->ranking.within_error_count;
    if (tied <= 1) {
      out << "rank 1 leads every other layout shown by more than the "
             "model's error\n";
    } else {
      out << absl::StrFormat(
          "%s within the model's error of rank 1: the cost model cannot order "
          "them, trials can (tessera submit)\n",
          tied == shown
              ? absl::StrCat("all ", shown, " layouts shown are")
              : absl::StrCat(tied, " of the ", shown, " layouts shown are"));
    }
    out << "  error: " << u->spreads.source << "\n";
  }
  PrintWhyTopCandidates(r, u, kExplainedCandidates, out);
  PrintBest("best throughput", w, r.best_throughput,
            u == nullptr ? nullptr : &u->best_throughput, out);
  if (r.best_energy.layout == r.best_throughput.layout) {
    out << "best energy: the same layout\n";
  } else {
    PrintBest("best energy", w, r.best_energy,
              u == nullptr ? nullptr : &u->best_energy, out);
  }
  out << "pareto front (tokens/s against tokens/J): " << r.pareto.size()
      << " layout" << (r.pareto.size() == 1 ? "" : "s") << "\n";
  for (const planner::LayoutEvaluation& e : r.pareto) {
    out << absl::StrFormat(
        "  %12.0f tokens/s %8.3f tokens/J  %s\n", e.prediction.tokens_per_s,
        e.prediction.tokens_per_joule, FormatLayout(e.layout));
  }
}

void PrintPredictionCsv(const planner::LayoutEvaluation& e,
                        const planner::StepTimeInterval* interval,
                        std::ostream& out) {
  out << CsvLine({"feasible",
                  "reason",
                  "tp",
                  "sp",
                  "pp",
                  "vpp",
                  "cp",
                  "dp",
                  "zero",
                  "shard_group",
                  "micro_batch",
                  "grad_accum",
                  "recompute",
                  "step_time_s",
                  "step_time_low_s",
                  "step_time_high_s",
                  "tokens_per_s",
                  "tokens_per_s_per_gpu",
                  "tflops_per_gpu",
                  "mfu",
                  "memory_gib_per_gpu",
                  "compute_s",
                  "exposed_comm_s",
                  "bubble_s",
                  "watts_per_gpu",
                  "tokens_per_joule",
                  "full_run_days",
                  "full_run_energy_mwh",
                  "full_run_gpu_hours"});
  const Layout& l = e.layout;
  const planner::Prediction& p = e.prediction;
  // An infeasible layout has no prediction: only its memory, when known.
  auto number = [](bool known, double value) {
    return CsvNumber(known ? std::optional<double>(value) : std::nullopt);
  };
  const bool ok = e.feasible;
  const bool full = ok && p.full_run.has_value();
  const bool has_interval = ok && interval != nullptr;
  out << CsvLine({
      ok ? "true" : "false",
      e.reason,
      absl::StrCat(l.tp),
      absl::StrCat(l.sp ? 1 : 0),
      absl::StrCat(l.pp),
      absl::StrCat(l.vpp),
      absl::StrCat(l.cp),
      absl::StrCat(l.dp),
      absl::StrCat(l.zero),
      absl::StrCat(l.shard_group),
      absl::StrCat(l.micro_batch),
      absl::StrCat(l.grad_accum),
      std::string(RecomputeName(l.recompute)),
      number(ok, p.step_time_s),
      number(has_interval, has_interval ? interval->low_s : 0),
      number(has_interval, has_interval ? interval->high_s : 0),
      number(ok, p.tokens_per_s),
      number(ok, p.tokens_per_s_per_gpu),
      number(ok, p.tflops_per_gpu),
      number(ok, p.mfu),
      number(ok || p.memory.total_bytes > 0, p.memory_gib_per_gpu),
      number(ok, p.compute_s),
      number(ok, p.exposed_comm_s),
      number(ok, p.bubble_s),
      number(ok, p.watts_per_gpu),
      number(ok, p.tokens_per_joule),
      number(full, full ? p.full_run->days : 0),
      number(full, full ? p.full_run->energy_mwh : 0),
      number(full, full ? p.full_run->gpu_hours : 0),
  });
}

void PrintPrediction(const Workload& w, const planner::LayoutEvaluation& e,
                     std::ostream& out,
                     const planner::StepTimeInterval* interval,
                     const std::string& source) {
  const planner::Prediction& p = e.prediction;
  out << DescribeWorkload(w) << "\n";
  out << "layout: " << FormatLayout(e.layout) << "\n";
  if (!e.feasible) {
    out << "infeasible: " << e.reason << "\n";
    if (p.memory.total_bytes > 0) {
      out << "memory per GPU: " << MemoryAccount(p.memory) << "\n";
    }
    return;
  }
  out << absl::StrFormat(
      "step time:      %.4f s (compute %.4f s, communication %.4f s of which "
      "exposed %.4f s, bubble %.4f s)\n",
      p.step_time_s, p.compute_s, p.comm_s, p.exposed_comm_s, p.bubble_s);
  if (interval != nullptr) {
    out << absl::StrFormat("uncertainty:    %.4f-%.4f s at +-1 sd (%s)\n",
                           interval->low_s, interval->high_s, source);
  }
  out << absl::StrFormat(
      "throughput:     %.0f tokens/s, %.0f tokens/s per GPU, %.1f TFLOP/s "
      "per GPU, MFU %.1f%%\n",
      p.tokens_per_s, p.tokens_per_s_per_gpu, p.tflops_per_gpu, 100 * p.mfu);
  out << "memory per GPU: " << MemoryAccount(p.memory) << "\n";
  out << absl::StrFormat(
      "communication:  tp %.4f s, pp %.4f s, dp %.4f s, cp %.4f s; exposed: "
      "tp %.4f s, pp %.4f s, dp %.4f s, cp %.4f s\n",
      p.tp_comm_s, p.pp_comm_s, p.dp_comm_s, p.cp_comm_s, p.tp_exposed_s,
      p.pp_exposed_s, p.dp_exposed_s, p.cp_exposed_s);
  out << absl::StrFormat("power:          %.0f W per GPU, %.3f tokens/J\n",
                         p.watts_per_gpu, p.tokens_per_joule);
  out << FullRunLine(w, p) << "\n";
}

std::string DumpJson(const nlohmann::json& json) {
  return json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tessera::cli
