#include "cli/scale_output.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/text_table.h"
#include "core/layout_json.h"

namespace tessera::cli {
namespace {

using costmodel::ScalePoint;

std::string Grouped(int64_t n) { return costmodel::GroupedCount(n); }

// "tp2+sp pp4x2 cp2 dp64 z3/8 mb1 ga4 selective": the knobs that differ
// from their default, short enough for a table.
std::string ShortLayout(const Layout& l) {
  std::string s = absl::StrCat("tp", l.tp, l.sp ? "+sp" : "", " pp", l.pp);
  if (l.vpp > 1) absl::StrAppend(&s, "x", l.vpp);
  if (l.cp > 1) absl::StrAppend(&s, " cp", l.cp);
  absl::StrAppend(&s, " dp", l.dp, " z", l.zero);
  if (l.zero > 0 && l.shard_group != l.dp) {
    absl::StrAppend(&s, "/", l.shard_group);
  }
  absl::StrAppend(&s, " mb", l.micro_batch, " ga", l.grad_accum, " ",
                  RecomputeName(l.recompute));
  return s;
}

// The share of a step that communication costs: exposed communication,
// pipeline waits and the compute's slowdown beside hidden collectives.
double CommunicationCostFraction(const costmodel::Prediction& p) {
  return p.step_time_s > 0 ? (p.exposed_comm_s + p.bubble_s +
                              p.overlap_slowdown_s) /
                                 p.step_time_s
                           : 0;
}

// A change against a reference: "+12%", "-0.8%", or "255x" past double.
std::string Signed(double fraction) {
  if (fraction >= 1) return absl::StrFormat("%.3gx", 1 + fraction);
  if (std::abs(fraction) < 0.1) {
    return absl::StrFormat("%+.1f%%", 100 * fraction);
  }
  return absl::StrFormat("%+.0f%%", 100 * fraction);
}

// Whether two points' figures agree to 0.1% (one of them is enough to show).
bool Alike(const ScalePoint& a, const ScalePoint& b) {
  auto close = [](double x, double y) {
    return std::abs(x - y) <= 1e-3 * std::max(std::abs(x), std::abs(y));
  };
  return a.gpus == b.gpus && close(a.seconds_per_token, b.seconds_per_token) &&
         close(a.joules_per_token, b.joules_per_token) &&
         close(a.gpu_seconds_per_token, b.gpu_seconds_per_token);
}

// "3.21 days, 212.3 MWh, 157,286 GPU-hours" or, without a token budget,
// "1.2e+06 tokens/s, 2.315 tokens/J".
std::string RunFigures(const ScalePoint& p) {
  if (p.full_run.has_value()) {
    return absl::StrFormat(
        "%.2f days, %.1f MWh, %s GPU-hours", p.full_run->days,
        p.full_run->energy_mwh,
        Grouped(static_cast<int64_t>(p.full_run->gpu_hours + 0.5)));
  }
  return absl::StrFormat("%.4g tokens/s, %.4g tokens/J",
                         1 / p.seconds_per_token, 1 / p.joules_per_token);
}

// Why the least-energy point uses fewer GPUs than the fastest.
void ExplainEnergy(const ScalePoint& fast, const ScalePoint& frugal,
                   std::ostream& out) {
  const costmodel::Prediction& f = fast.evaluation.prediction;
  const costmodel::Prediction& g = frugal.evaluation.prediction;
  out << absl::StrFormat(
      "why fewer GPUs use less energy: energy per token is watts per GPU over "
      "tokens/s per GPU. On %s GPUs each GPU makes %.0f tokens/s at %.0f W "
      "(%.3f J per token); on %s GPUs %.0f "
      "tokens/s at %.0f W (%.3f J). With the global batch kept, more GPUs "
      "each hold fewer sequences per step, so the communication each step "
      "needs hides behind less compute: exposed communication, pipeline "
      "waits and compute slowed by the collectives it hides take %.0f%% of "
      "the %s-GPU step against %.0f%%, while a waiting or slowed GPU still "
      "draws nearly its computing power.\n",
      Grouped(fast.gpus), f.tokens_per_s_per_gpu, f.watts_per_gpu,
      fast.joules_per_token, Grouped(frugal.gpus), g.tokens_per_s_per_gpu,
      g.watts_per_gpu, frugal.joules_per_token,
      100 * CommunicationCostFraction(f), Grouped(fast.gpus),
      100 * CommunicationCostFraction(g));
}

}  // namespace

nlohmann::json ScalePointJson(const ScalePoint& p) {
  const costmodel::Prediction& pred = p.evaluation.prediction;
  nlohmann::json j{{"nodes", p.nodes},
                   {"gpus", p.gpus},
                   {"layout", LayoutToJson(p.evaluation.layout)},
                   {"tokens_per_s", pred.tokens_per_s},
                   {"tokens_per_s_per_gpu", pred.tokens_per_s_per_gpu},
                   {"watts_per_gpu", pred.watts_per_gpu},
                   {"joules_per_token", p.joules_per_token},
                   {"idle_joules_per_token", p.idle_joules_per_token},
                   {"gpu_seconds_per_token", p.gpu_seconds_per_token}};
  if (p.full_run.has_value()) {
    j["full_run"] = {{"days", p.full_run->days},
                     {"energy_mwh", p.full_run->energy_mwh},
                     {"gpu_hours", p.full_run->gpu_hours}};
  }
  return j;
}

nlohmann::json ScaleJson(const Workload& w, const costmodel::ScaleResult& r,
                         const costmodel::ScaleOptions& o) {
  nlohmann::json counts = nlohmann::json::array();
  for (size_t i = 0; i < r.counts.size(); ++i) {
    const costmodel::ScaleCount& c = r.counts[i];
    const std::optional<ScalePoint> best = costmodel::BestOfCount(w, r, i, o);
    counts.push_back(
        {{"nodes", c.nodes},
         {"gpus", c.gpus},
         {"skipped",
          c.skipped.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.skipped)},
         {"searched", c.search.searched},
         {"feasible", c.search.feasible},
         {"best", best ? ScalePointJson(*best) : nlohmann::json(nullptr)}});
  }
  nlohmann::json front = nlohmann::json::array();
  for (const ScalePoint& p : r.front) front.push_back(ScalePointJson(p));
  nlohmann::json marginal = nlohmann::json::array();
  for (const costmodel::MarginalCost& m : costmodel::MarginalCosts(r.front)) {
    marginal.push_back(
        {{"more_gpus", m.more_gpus},
         {"fewer_gpus", m.fewer_gpus},
         {"time_saved_fraction", m.time_saved_fraction},
         {"extra_energy_fraction", m.extra_energy_fraction},
         {"extra_gpu_hours_fraction", m.extra_gpu_hours_fraction},
         {"text", costmodel::DescribeMarginalCost(m)}});
  }
  const ScalePoint* chosen = r.chosen();
  return {{"objective", std::string(costmodel::RunObjectiveName(o.objective))},
          {"deadline_days", o.deadline_days ? nlohmann::json(*o.deadline_days)
                                            : nlohmann::json(nullptr)},
          {"charge_idle_gpus", o.charge_idle_gpus},
          {"cluster_nodes", r.cluster_nodes},
          {"cluster_gpus", r.cluster_gpus},
          {"elapsed_ms", r.elapsed_ms},
          {"counts", std::move(counts)},
          {"front", std::move(front)},
          {"chosen", chosen ? ScalePointJson(*chosen) : nlohmann::json(nullptr)},
          {"meets_deadline", chosen != nullptr && r.choice.meets_deadline},
          {"marginal", std::move(marginal)}};
}

void PrintScale(const Workload& w, const costmodel::ScaleResult& r,
                const costmodel::ScaleOptions& o, std::ostream& out) {
  const std::string objective(costmodel::RunObjectiveName(o.objective));
  out << absl::StrFormat(
      "\nGPU count: %d whole-node counts of the cluster's %s GPUs searched "
      "in %.0f ms (global batch %d sequences kept; micro-batch and gradient "
      "accumulation absorb the difference); objective: %s%s\n",
      r.counts.size(), Grouped(r.cluster_gpus), r.elapsed_ms,
      w.training.global_batch, objective,
      o.deadline_days ? absl::StrFormat(", deadline %.4g days", *o.deadline_days)
                      : "");
  if (r.front.empty()) {
    out << "no count has a feasible layout\n";
    return;
  }
  const ScalePoint& chosen = *r.chosen();
  TextTable table({{"nodes", kRight},
                   {"GPUs", kRight},
                   TableColumn(absl::StrCat("best layout for ", objective))
                       .Short("layout")
                       .Cut(20),
                   TableColumn("tokens/s/GPU", kRight).Short("tok/s/GPU"),
                   TableColumn("W/GPU", kRight).Drop(2),
                   TableColumn(w.training.total_tokens > 0 ? "days" : "tokens/s",
                               kRight),
                   TableColumn(w.training.total_tokens > 0 ? "MWh" : "tokens/J",
                               kRight),
                   TableColumn("GPU-hours", kRight).Drop(1).Short("GPU-h"),
                   {""}});
  for (size_t i = 0; i < r.counts.size(); ++i) {
    const costmodel::ScaleCount& c = r.counts[i];
    const std::optional<ScalePoint> best = costmodel::BestOfCount(w, r, i, o);
    if (!best.has_value()) {
      table.AddRow({absl::StrCat(c.nodes), Grouped(c.gpus),
                    c.skipped.empty() ? "no feasible layout"
                                      : "global batch not reachable"});
      continue;
    }
    const costmodel::Prediction& p = best->evaluation.prediction;
    const bool on_front = costmodel::IsOnScaleFront(r, *best);
    const bool is_chosen = costmodel::IsScaleChoice(r, *best);
    const bool budget = best->full_run.has_value();
    table.AddRow(
        {absl::StrCat(c.nodes), Grouped(c.gpus),
         ShortLayout(best->evaluation.layout),
         absl::StrFormat("%.0f", p.tokens_per_s_per_gpu),
         absl::StrFormat("%.0f", p.watts_per_gpu),
         budget ? absl::StrFormat("%.2f", best->full_run->days)
                : absl::StrFormat("%.4g", p.tokens_per_s),
         budget ? absl::StrFormat("%.1f", best->full_run->energy_mwh)
                : absl::StrFormat("%.4g", 1 / best->joules_per_token),
         budget ? Grouped(static_cast<int64_t>(best->full_run->gpu_hours + 0.5))
                : absl::StrFormat("%.4g", best->gpu_seconds_per_token),
         is_chosen ? "chosen" : (on_front ? "front" : "")});
  }
  table.Print(out, kTableWidth);

  out << absl::StrFormat(
      "pareto front of time against energy and GPU-hours across counts: %d "
      "point%s, fastest first\n",
      r.front.size(), r.front.size() == 1 ? "" : "s");
  for (size_t i = 0; i < r.front.size(); ++i) {
    const ScalePoint& p = r.front[i];
    // Layouts of one count whose figures agree to 0.1%: the first stands
    // for them.
    if (i > 0 && i != r.choice.index && Alike(p, r.front[i - 1])) continue;
    out << absl::StrFormat("  %s %6s GPUs  %s  %s\n",
                           i == r.choice.index ? "*" : " ", Grouped(p.gpus),
                           RunFigures(p), FormatLayout(p.evaluation.layout));
  }
  const std::vector<costmodel::MarginalCost> costs =
      costmodel::MarginalCosts(r.front);
  if (!costs.empty()) {
    out << costmodel::DescribeMarginalCost(costs.front()) << "\n";
  }
  const ScalePoint& fast = r.front.front();
  const ScalePoint* frugal = &r.front.front();
  for (const ScalePoint& p : r.front) {
    if (p.joules_per_token < frugal->joules_per_token) frugal = &p;
  }
  if (frugal->gpus < fast.gpus) {
    const double saved = 1 - frugal->joules_per_token / fast.joules_per_token;
    out << absl::StrFormat(
        "least energy: %s GPUs, %s energy and %s the time of the fastest "
        "(%s GPUs)\n",
        Grouped(frugal->gpus),
        Signed(frugal->joules_per_token / fast.joules_per_token - 1),
        Signed(frugal->seconds_per_token / fast.seconds_per_token - 1),
        Grouped(fast.gpus));
    if (saved >= 0.01) {
      ExplainEnergy(fast, *frugal, out);
    } else {
      out << "energy is nearly flat across counts: tokens/s and watts per "
             "GPU hardly change with the count (the communication stays "
             "hidden behind compute), so fewer GPUs mostly take longer\n";
    }
  }

  std::string deadline;
  if (o.deadline_days.has_value()) {
    deadline = r.choice.meets_deadline
                   ? absl::StrFormat(" within the deadline of %.4g days",
                                     *o.deadline_days)
                   : absl::StrFormat(
                         "; no count meets the deadline of %.4g days, this "
                         "is the fastest",
                         *o.deadline_days);
  }
  out << absl::StrFormat("chosen for %s%s: %s GPUs (%d of %d nodes), %s: %s\n",
                         objective, deadline, Grouped(chosen.gpus),
                         chosen.nodes, r.cluster_nodes,
                         FormatLayout(chosen.evaluation.layout),
                         RunFigures(chosen));
  if (&chosen != &fast) {
    out << absl::StrFormat(
        "  against the fastest (%s GPUs): %s time, %s energy, %s GPU-hours\n",
        Grouped(fast.gpus),
        Signed(chosen.seconds_per_token / fast.seconds_per_token - 1),
        Signed(chosen.joules_per_token / fast.joules_per_token - 1),
        Signed(chosen.gpu_seconds_per_token / fast.gpu_seconds_per_token - 1));
  }
  const int64_t unused = r.cluster_gpus - chosen.gpus;
  if (unused > 0) {
    const double idle_w = w.cluster.gpu.idle_w;
    const double idle_mwh =
        chosen.full_run.has_value()
            ? static_cast<double>(unused) * idle_w * chosen.full_run->days *
                  86400 / 3.6e9
            : 0;
    const std::string over_run =
        chosen.full_run.has_value()
            ? absl::StrFormat(": %.1f MWh over this run", idle_mwh)
            : "";
    if (o.charge_idle_gpus) {
      out << absl::StrFormat(
          "unused GPUs: the %s GPUs this run leaves free are charged their "
          "idle power (%.0f W each%s), included above\n",
          Grouped(unused), idle_w, over_run);
    } else {
      out << absl::StrFormat(
          "unused GPUs: the %s GPUs this run leaves free are not charged to "
          "it (they can run other work); --charge-idle charges their idle "
          "power (%.0f W each%s)\n",
          Grouped(unused), idle_w, over_run);
    }
  }
}

void PrintLayoutAcrossCounts(const Workload& w,
                             const std::vector<ScalePoint>& points,
                             std::ostream& out) {
  if (points.empty()) return;
  const bool budget = w.training.total_tokens > 0;
  out << "\nthe same layout on part of the cluster (whole nodes; dp and "
         "gradient accumulation absorb the global batch):\n";
  TextTable table({{"nodes", kRight},
                   {"GPUs", kRight},
                   {"dp", kRight},
                   {"ga", kRight},
                   TableColumn("tokens/s/GPU", kRight).Short("tok/s/GPU"),
                   {"W/GPU", kRight},
                   {budget ? "days" : "tokens/s", kRight},
                   {budget ? "MWh" : "tokens/J", kRight},
                   TableColumn("GPU-hours", kRight).Drop(1).Short("GPU-h")});
  for (const ScalePoint& p : points) {
    const costmodel::Prediction& pred = p.evaluation.prediction;
    table.AddRow(
        {absl::StrCat(p.nodes), Grouped(p.gpus),
         absl::StrCat(p.evaluation.layout.dp),
         absl::StrCat(p.evaluation.layout.grad_accum),
         absl::StrFormat("%.0f", pred.tokens_per_s_per_gpu),
         absl::StrFormat("%.0f", pred.watts_per_gpu),
         budget ? absl::StrFormat("%.2f", p.full_run->days)
                : absl::StrFormat("%.4g", pred.tokens_per_s),
         budget ? absl::StrFormat("%.1f", p.full_run->energy_mwh)
                : absl::StrFormat("%.4g", 1 / p.joules_per_token),
         budget ? Grouped(static_cast<int64_t>(p.full_run->gpu_hours + 0.5))
                : absl::StrFormat("%.4g", p.gpu_seconds_per_token)});
  }
  table.Print(out, kTableWidth);
  if (points.size() >= 2) {
    const ScalePoint& most = points.back();
    const ScalePoint& before = points[points.size() - 2];
    costmodel::MarginalCost c;
    c.more_gpus = most.gpus;
    c.fewer_gpus = before.gpus;
    c.time_saved_fraction =
        1 - most.seconds_per_token / before.seconds_per_token;
    c.extra_energy_fraction =
        most.joules_per_token / before.joules_per_token - 1;
    out << costmodel::DescribeMarginalCost(c) << "\n";
  }
}

}  // namespace tessera::cli
