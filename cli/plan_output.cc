#include "cli/plan_output.h"

#include <algorithm>
#include <functional>
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

std::string FullRunLine(const Workload& w, const costmodel::Prediction& p) {
  if (!p.full_run.has_value()) {
    return "full run: give --total-tokens (training.total_tokens) for days, "
           "MWh and GPU-hours";
  }
  return absl::StrFormat("full run of %.3g tokens: %s days, %s, %s GPU-hours",
                         w.training.total_tokens, Readable(p.full_run->days),
                         ReadableEnergyMwh(p.full_run->energy_mwh),
                         Readable(p.full_run->gpu_hours));
}

// " (1.63-1.99 s at +-1 sd)".
std::string IntervalText(const costmodel::StepTimeInterval& i) {
  return absl::StrFormat(" (%.3f-%.3f s at +-1 sd)", i.low_s, i.high_s);
}

nlohmann::json IntervalJson(const costmodel::StepTimeInterval& i) {
  return nlohmann::json::array({i.low_s, i.high_s});
}

// The layout as far as it was resolved: a layout refused before dp was
// known names only what was given ("tp=3,...; dp, shard group and gradient
// accumulation not resolved"), never "dp=0".
std::string LayoutAsResolved(const Layout& l) {
  if (l.dp > 0 && l.shard_group > 0 && l.grad_accum > 0) {
    return FormatLayout(l);
  }
  std::string text = absl::StrCat("tp=", l.tp, ",sp=", l.sp ? 1 : 0,
                                  ",pp=", l.pp, ",vpp=", l.vpp, ",cp=", l.cp);
  std::vector<std::string> unresolved;
  auto field = [&](absl::string_view key, int64_t value,
                   absl::string_view name) {
    if (value > 0) {
      absl::StrAppend(&text, ",", key, "=", value);
    } else {
      unresolved.push_back(std::string(name));
    }
  };
  field("dp", l.dp, "dp");
  absl::StrAppend(&text, ",zero=", l.zero);
  field("shard_group", l.shard_group, "shard group");
  absl::StrAppend(&text, ",micro_batch=", l.micro_batch);
  field("grad_accum", l.grad_accum, "gradient accumulation");
  const std::string last = unresolved.back();
  unresolved.pop_back();
  absl::StrAppend(&text, ",recompute=", RecomputeName(l.recompute), " (",
                  absl::StrJoin(unresolved, ", "),
                  unresolved.empty() ? "" : " and ", last, " not resolved)");
  return text;
}

// Whether MFU has a second, precision-own peak: fp8 on a GPU with one.
bool HasPrecisionPeak(const Workload& w) {
  return w.training.precision == Precision::kFp8 &&
         w.cluster.gpu.peak_fp8_tflops > 0;
}

// "MFU 80.1% (bf16 peak)" or, for fp8, "MFU 40.0% of the fp8 peak, 80.1% of
// the bf16 peak".
std::string MfuText(const Workload& w, const costmodel::Prediction& p) {
  if (!HasPrecisionPeak(w)) return absl::StrFormat("MFU %.1f%%", 100 * p.mfu);
  return absl::StrFormat("MFU %.1f%% of the fp8 peak, %.1f%% of the bf16 peak",
                         100 * PrecisionMfu(w, p.mfu), 100 * p.mfu);
}

// The two summary lines of a best layout.
void PrintBest(absl::string_view title, const Workload& w,
               const costmodel::LayoutEvaluation& e,
               const costmodel::StepTimeInterval* interval, std::ostream& out) {
  const costmodel::Prediction& p = e.prediction;
  out << title << ": " << FormatLayout(e.layout) << "\n";
  out << absl::StrFormat(
      "  %.0f tokens/s (%.0f per GPU), step %.3f s%s, %s, %.1f GiB "
      "per GPU, %.0f W per GPU, %.3f tokens/J\n",
      p.tokens_per_s, p.tokens_per_s_per_gpu, p.step_time_s,
      interval == nullptr ? "" : IntervalText(*interval), MfuText(w, p),
      p.memory_gib_per_gpu, p.watts_per_gpu, p.tokens_per_joule);
  out << "  " << FullRunLine(w, p) << "\n";
}

}  // namespace

double PrecisionMfu(const Workload& w, double mfu_bf16) {
  if (!HasPrecisionPeak(w)) return mfu_bf16;
  return mfu_bf16 * w.cluster.gpu.peak_dense_tflops /
         w.cluster.gpu.peak_fp8_tflops;
}

nlohmann::json MemoryBreakdownJson(const costmodel::MemoryBreakdown& m) {
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

nlohmann::json PredictionJson(const costmodel::Prediction& p) {
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
                   {"overlap_slowdown_s", p.overlap_slowdown_s},
                   {"host_wait_s", p.host_wait_s},
                   {"watts_per_gpu", p.watts_per_gpu},
                   {"tokens_per_joule", p.tokens_per_joule}};
  if (p.full_run.has_value()) {
    j["full_run"] = {{"days", p.full_run->days},
                     {"energy_mwh", p.full_run->energy_mwh},
                     {"gpu_hours", p.full_run->gpu_hours}};
  }
  return j;
}

nlohmann::json CandidateJson(const costmodel::LayoutEvaluation& e) {
  return nlohmann::json{{"layout", LayoutToJson(e.layout)},
                        {"prediction", PredictionJson(e.prediction)}};
}

nlohmann::json PlanJson(const costmodel::SearchResult& r,
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
  for (const costmodel::LayoutEvaluation& e : r.pareto) {
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

nlohmann::json PredictJson(const costmodel::LayoutEvaluation& e,
                           const costmodel::StepTimeInterval* interval,
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
      "peak, %.0f TFLOP/s per GPU%s",
      w.model.name, w.model.ParamCount() / 1e9, w.cluster.nodes,
      w.cluster.gpus_per_node, w.cluster.gpu.name, w.cluster.world_size(),
      t.global_batch, t.seq_len, t.tokens_per_step(), t.stack,
      t.stack == kDefaultTrainingStack ? " (the default; --stack to change)"
                                       : "",
      t.stack_options.empty()
          ? ""
          : absl::StrCat(" with ", absl::StrJoin(t.stack_options, ",")),
      PrecisionName(t.precision), DescribeMemoryHeadroom(w.cluster),
      w.cluster.gpu.name, w.cluster.gpu.peak_dense_tflops,
      HasPrecisionPeak(w)
          ? absl::StrFormat(" (MFU bf16), and over its dense fp8 peak, %.0f "
                            "TFLOP/s (MFU fp8)",
                            w.cluster.gpu.peak_fp8_tflops)
          : "");
}

// The candidates `tessera plan` explains part by part.
constexpr int64_t kExplainedCandidates = 3;

void PrintCandidateTable(const Workload& w, const costmodel::SearchResult& r,
                         std::ostream& out, size_t max_width) {
  // The layout's knobs, each a column. Fitting max_width: short titles, then
  // the knobs that are the same in every row go first (said once under the
  // table), so that rows that differ show where (a knob that varies is never
  // dropped), then the watts, bubble and MFU bf16 columns, in that order.
  struct Knob {
    const char* title;
    std::function<std::string(const Layout&)> cell;
  };
  const std::vector<Knob> knobs = {
      {"tp", [](const Layout& l) { return absl::StrCat(l.tp); }},
      {"sp", [](const Layout& l) { return absl::StrCat(l.sp ? 1 : 0); }},
      {"pp", [](const Layout& l) { return absl::StrCat(l.pp); }},
      {"vpp", [](const Layout& l) { return absl::StrCat(l.vpp); }},
      {"cp", [](const Layout& l) { return absl::StrCat(l.cp); }},
      {"dp", [](const Layout& l) { return absl::StrCat(l.dp); }},
      {"zero", [](const Layout& l) { return absl::StrCat(l.zero); }},
      {"shard", [](const Layout& l) { return absl::StrCat(l.shard_group); }},
      {"mb", [](const Layout& l) { return absl::StrCat(l.micro_batch); }},
      {"ga", [](const Layout& l) { return absl::StrCat(l.grad_accum); }},
      {"recompute",
       [](const Layout& l) { return std::string(RecomputeName(l.recompute)); }},
  };
  std::vector<bool> constant(knobs.size(), true);
  for (size_t k = 0; k < knobs.size(); ++k) {
    for (const costmodel::LayoutEvaluation& e : r.candidates) {
      constant[k] = constant[k] && knobs[k].cell(e.layout) ==
                                       knobs[k].cell(r.candidates[0].layout);
    }
  }
  const bool fp8_peak = HasPrecisionPeak(w);
  // Drop ranks: the constant knobs first (1..), then the others.
  int constant_rank = 0;
  for (size_t k = 0; k < knobs.size(); ++k) {
    if (constant[k] && r.candidates.size() > 1) ++constant_rank;
  }
  const int after = constant_rank;
  std::vector<TableColumn> columns = {{"rank", kRight}};
  int next_constant = 0;
  for (size_t k = 0; k < knobs.size(); ++k) {
    TableColumn c(knobs[k].title, k + 1 == knobs.size() ? kLeft : kRight);
    if (k + 1 == knobs.size()) c = c.Short("recomp");
    if (constant[k] && r.candidates.size() > 1) c = c.Drop(++next_constant);
    columns.push_back(c);
  }
  const size_t first_metric = columns.size();
  columns.push_back({"step s", kRight});
  columns.push_back({"tokens/s", kRight});
  columns.push_back({fp8_peak ? "MFU fp8" : "MFU", kRight});
  if (fp8_peak) {
    columns.push_back(TableColumn("MFU bf16", kRight).Drop(after + 3));
  }
  columns.push_back(TableColumn("GiB/GPU", kRight).Short("GiB"));
  columns.push_back(TableColumn("exposed comm s", kRight).Short("exposed s"));
  columns.push_back(
      TableColumn("bubble s", kRight).Drop(after + 2).Short("bub s"));
  columns.push_back(TableColumn("W/GPU", kRight).Drop(after + 1).Short("W"));
  columns.push_back(TableColumn("tokens/J", kRight).Short("tok/J"));
  TextTable table(std::move(columns));
  int rank = 0;
  for (const costmodel::LayoutEvaluation& e : r.candidates) {
    const costmodel::Prediction& p = e.prediction;
    std::vector<std::string> cells = {absl::StrCat(++rank)};
    for (const Knob& k : knobs) cells.push_back(k.cell(e.layout));
    cells.push_back(absl::StrFormat("%.3f", p.step_time_s));
    cells.push_back(absl::StrFormat("%.0f", p.tokens_per_s));
    cells.push_back(absl::StrFormat("%.1f%%", 100 * PrecisionMfu(w, p.mfu)));
    if (fp8_peak) cells.push_back(absl::StrFormat("%.1f%%", 100 * p.mfu));
    cells.push_back(absl::StrFormat("%.1f", p.memory_gib_per_gpu));
    cells.push_back(absl::StrFormat("%.3f", p.exposed_comm_s));
    cells.push_back(absl::StrFormat("%.3f", p.bubble_s));
    cells.push_back(absl::StrFormat("%.0f", p.watts_per_gpu));
    cells.push_back(absl::StrFormat("%.3f", p.tokens_per_joule));
    table.AddRow(std::move(cells));
  }
  table.Print(out, max_width);
  // The knobs the table left out are the same in every row: say them.
  const std::vector<bool> shown = table.ShownColumns(max_width);
  std::vector<std::string> same;
  for (size_t k = 0; k < knobs.size() && k + 1 < first_metric; ++k) {
    if (!shown[k + 1]) {
      same.push_back(absl::StrCat(knobs[k].title, "=",
                                  knobs[k].cell(r.candidates[0].layout)));
    }
  }
  if (!same.empty()) {
    out << "every row: " << absl::StrJoin(same, ", ") << "\n";
  }
}

void PrintPlanCsv(const costmodel::SearchResult& r, const PlanUncertainty* u,
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
    const costmodel::Prediction& p = r.candidates[i].prediction;
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

void PrintPlan(const Workload& w, const costmodel::SearchResult& r,
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
  PrintCandidateTable(w, r, out, max_width);
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
  for (const costmodel::LayoutEvaluation& e : r.pareto) {
    out << absl::StrFormat(
        "  %12.0f tokens/s %8.3f tokens/J  %s\n", e.prediction.tokens_per_s,
        e.prediction.tokens_per_joule, FormatLayout(e.layout));
  }
}

void PrintPredictionCsv(const costmodel::LayoutEvaluation& e,
                        const costmodel::StepTimeInterval* interval,
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
  const costmodel::Prediction& p = e.prediction;
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

void PrintPrediction(const Workload& w, const costmodel::LayoutEvaluation& e,
                     std::ostream& out,
                     const costmodel::StepTimeInterval* interval,
                     const std::string& source) {
  const costmodel::Prediction& p = e.prediction;
  out << DescribeWorkload(w) << "\n";
  out << "layout: " << LayoutAsResolved(e.layout) << "\n";
  if (!e.feasible) {
    out << "infeasible: " << e.reason << "\n";
    if (p.memory.total_bytes > 0) {
      out << "memory per GPU: " << MemoryAccount(p.memory) << "\n";
    }
    return;
  }
  out << absl::StrFormat(
      "step time:      %.4f s (compute %.4f s%s%s, communication %.4f s of "
      "which exposed %.4f s, bubble %.4f s)\n",
      p.step_time_s, p.compute_s,
      p.overlap_slowdown_s > 1e-6
          ? absl::StrFormat(" of which %.4f s slowed by hidden communication",
                            p.overlap_slowdown_s)
          : "",
      p.host_wait_s > 1e-6
          ? absl::StrFormat(" %s %.4f s waiting for the host",
                            p.overlap_slowdown_s > 1e-6 ? "and" : "of which",
                            p.host_wait_s)
          : "",
      p.comm_s, p.exposed_comm_s, p.bubble_s);
  if (interval != nullptr) {
    out << absl::StrFormat("uncertainty:    %.4f-%.4f s at +-1 sd (%s)\n",
                           interval->low_s, interval->high_s, source);
  }
  out << absl::StrFormat(
      "throughput:     %.0f tokens/s, %.0f tokens/s per GPU, %.1f TFLOP/s "
      "per GPU, %s\n",
      p.tokens_per_s, p.tokens_per_s_per_gpu, p.tflops_per_gpu, MfuText(w, p));
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
