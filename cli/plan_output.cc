#include "cli/plan_output.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/layout_explanation.h"
#include "core/layout_json.h"

namespace tessera::cli {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

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

void PrintPlan(const Workload& w, const planner::SearchResult& r,
               std::ostream& out, const PlanUncertainty* u) {
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
  out << "\n"
      << absl::StrFormat(
             "%4s %3s %2s %3s %3s %3s %6s %4s %6s %3s %5s %-9s %8s %12s %6s "
             "%8s %9s %8s %6s %8s\n",
             "rank", "tp", "sp", "pp", "vpp", "cp", "dp", "zero", "shard", "mb",
             "ga", "recompute", "step s", "tokens/s", "MFU", "GiB/GPU",
             "exposed s", "bubble s", "W/GPU", "tokens/J");
  int rank = 0;
  for (const planner::LayoutEvaluation& e : r.candidates) {
    const Layout& l = e.layout;
    const planner::Prediction& p = e.prediction;
    out << absl::StrFormat(
        "%4d %3d %2d %3d %3d %3d %6d %4d %6d %3d %5d %-9s %8.3f %12.0f "
        "%5.1f%% %8.1f %9.3f %8.3f %6.0f %8.3f\n",
        ++rank, l.tp, l.sp ? 1 : 0, l.pp, l.vpp, l.cp, l.dp, l.zero,
        l.shard_group, l.micro_batch, l.grad_accum, RecomputeName(l.recompute),
        p.step_time_s, p.tokens_per_s, 100 * p.mfu, p.memory_gib_per_gpu,
        p.exposed_comm_s, p.bubble_s, p.watts_per_gpu, p.tokens_per_joule);
  }
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
