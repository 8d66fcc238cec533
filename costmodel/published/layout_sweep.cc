#include "costmodel/published/layout_sweep.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <ostream>
#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/units.h"
#include "nlohmann/json.hpp"
#include "costmodel/memory/memory_model.h"
#include "costmodel/resolved_workload.h"
#include "costmodel/published/rank_correlation.h"
#include "costmodel/published/sweep_collectives.h"

namespace tessera::costmodel {
namespace {

using Json = nlohmann::json;


int64_t IntOf(const Json& row, const char* key, int64_t fallback) {
  if (!row.contains(key) || row[key].is_null()) return fallback;
  return row[key].get<int64_t>();
}

std::optional<double> NoteNumber(const std::string& notes,
                                 const std::regex& pattern) {
  std::smatch m;
  if (!std::regex_search(notes, m, pattern)) return std::nullopt;
  return std::stod(m[1].str());
}

absl::StatusOr<SweepRow> MapRow(int64_t index, const Json& row) {
  SweepRow r;
  r.index = index;
  const std::string notes = row.value("notes", "");
  ModelConfig m;
  m.name = row.at("model").get<std::string>();
  m.layers = row.at("layers").get<int64_t>();
  m.hidden = row.at("hidden").get<int64_t>();
  m.heads = row.at("heads").get<int64_t>();
  m.kv_heads = IntOf(row, "kv_heads", m.heads);
  m.ffn_hidden = row.at("ffn").get<int64_t>();
  m.vocab = row.at("vocab").get<int64_t>();
  m.mlp = MlpKind::kSwiGlu;
  m.tie_embeddings = absl::StrContains(notes, "tied embeddings") &&
                     !absl::StrContains(notes, "untied");
  if (absl::Status s = ValidateModel(m); !s.ok()) return s;

  const int64_t gpus = row.at("gpus").get<int64_t>();
  const int64_t per_node = IntOf(row, "gpus_per_node", 8);
  r.nodes = std::max<int64_t>(1, gpus / per_node);
  ClusterConfig cluster =
      MakeCluster(*GpuPreset("h100-sxm"), r.nodes, std::min(per_node, gpus));
  cluster.memory_headroom_fraction = 0;  // it ran, or it did not

  Layout l;
  l.tp = IntOf(row, "tp", 1);
  l.pp = IntOf(row, "pp", 1);
  l.cp = IntOf(row, "cp", 1);
  l.dp = IntOf(row, "dp", 0);
  l.sp = l.tp > 1;  // nanotron's REDUCE_SCATTER tp_mode
  l.micro_batch = IntOf(row, "micro_batch", 1);
  l.zero = absl::StrContains(row.value("zero_or_fsdp", ""), "zero1") ? 1 : 0;
  l.recompute = Recompute::kNone;
  // The notes' grad_acc is what ran (a few rows' global batch label
  // disagrees with it and say so).
  static const std::regex kGradAcc("grad_acc=([0-9]+)");
  const std::optional<double> grad_acc = NoteNumber(notes, kGradAcc);
  l.grad_accum = grad_acc ? static_cast<int64_t>(*grad_acc) : 0;

  TrainingConfig t;
  t.stack = "nanotron";
  t.seq_len = row.at("seq_len").get<int64_t>();
  t.global_batch = l.grad_accum > 0 ? l.micro_batch * l.dp * l.grad_accum
                                    : IntOf(row, "global_batch_seqs", 256);
  r.workload = Workload{m, cluster, t};
  if (absl::Status s = ValidateWorkload(r.workload); !s.ok()) return s;
  r.layout = l;
  r.group = absl::StrCat(m.name, "|", r.nodes);
  r.ran = row.value("status", "") == "ok";
  if (r.ran) {
    r.measured_tokens_per_s_per_gpu =
        row.at("measured_tokens_per_s_per_gpu").get<double>();
  }
  static const std::regex kPeak("peak GPU memory ([0-9.]+) GB");
  r.measured_peak_allocated_gib = NoteNumber(notes, kPeak);
  r.flagged = absl::StrContains(notes, "pathological") ||
              absl::StrContains(notes, "INCONSISTENT");
  return r;
}

// The sweep's bus bandwidth at 256 MiB by node count, 8 GPUs per node.
double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Stage 0's allocated bytes (what nanotron's rank 0 reports).
std::optional<double> StageZeroAllocatedBytes(const ResolvedWorkload& r,
                                              const LayoutEvaluation& e,
                                              const Calibration& c) {
  if (e.layout.dp == 0) return std::nullopt;
  const MemoryBreakdown m = StageMemory(r.workload.model, e.layout,
                                        r.workload.training, r.stack, c, 0);
  return m.total_bytes - m.overhead_bytes;
}

SweepScores Score(const std::vector<const SweepPrediction*>& rows,
                  const std::vector<const SweepGroupScore*>& groups) {
  SweepScores s;
  std::vector<double> abs_errors, errors;
  std::map<int64_t, std::vector<double>> memory;
  for (const SweepPrediction* p : rows) {
    const SweepRow& r = *p->row;
    if (!r.ran) ++s.failed_rows;
    if (!p->expressible) {
      ++s.inexpressible_rows;
      continue;
    }
    if (r.ran) {
      ++s.measured_rows;
      abs_errors.push_back(std::abs(p->error));
      errors.push_back(p->error);
      if (!p->evaluation.feasible) ++s.ran_called_infeasible;
      if (p->memory_ratio) memory[r.layout.pp].push_back(*p->memory_ratio);
    } else if (p->evaluation.feasible) {
      ++s.failed_called_feasible;
    }
  }
  s.median_abs_error = Median(abs_errors);
  s.median_error = Median(errors);
  for (const auto& [pp, ratios] : memory) {
    s.median_memory_ratio_by_pp[pp] = Median(ratios);
    s.memory_rows_by_pp[pp] = static_cast<int64_t>(ratios.size());
  }
  double rho_sum = 0;
  for (const SweepGroupScore* g : groups) {
    if (g->measured < 2) continue;
    ++s.groups;
    rho_sum += g->spearman;
    if (g->top_pick_ratio >= 0.95) ++s.top_pick_within_5pct;
  }
  if (s.groups > 0) s.mean_spearman = rho_sum / static_cast<double>(s.groups);
  return s;
}

SweepGroupScore ScoreGroup(const std::string& name,
                           const std::vector<const SweepPrediction*>& rows) {
  SweepGroupScore g;
  g.group = name;
  std::vector<double> predicted, measured, abs_errors;
  double best_measured = 0, best_predicted = -1;
  const SweepPrediction* pick = nullptr;
  for (const SweepPrediction* p : rows) {
    g.nodes = p->row->nodes;
    if (!p->expressible) continue;
    const double tokens = p->evaluation.prediction.tokens_per_s_per_gpu;
    if (p->row->ran) {
      predicted.push_back(tokens);
      measured.push_back(p->row->measured_tokens_per_s_per_gpu);
      abs_errors.push_back(std::abs(p->error));
      best_measured = std::max(best_measured, measured.back());
    }
    if (p->evaluation.feasible && tokens > best_predicted) {
      best_predicted = tokens;
      pick = p;
    }
  }
  g.measured = static_cast<int64_t>(measured.size());
  g.spearman = SpearmanRho(predicted, measured);
  g.median_abs_error = Median(abs_errors);
  if (pick != nullptr) {
    g.top_pick = FormatLayout(pick->evaluation.layout);
    if (pick->row->ran && best_measured > 0) {
      g.top_pick_ratio = pick->row->measured_tokens_per_s_per_gpu / best_measured;
    }
  }
  return g;
}

}  // namespace

absl::StatusOr<LayoutSweep> LoadLayoutSweep(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot be read"));
  const Json file = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (file.is_discarded() || !file.contains("rows") ||
      !file["rows"].is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a JSON object with a rows list"));
  }
  LayoutSweep sweep;
  for (size_t i = 0; i < file["rows"].size(); ++i) {
    absl::StatusOr<SweepRow> r;
    try {
      r = MapRow(static_cast<int64_t>(i), file["rows"][i]);
    } catch (const Json::exception& e) {
      r = absl::InvalidArgumentError(e.what());
    }
    if (!r.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": row ", i, ": ", r.status().message()));
    }
    sweep.rows.push_back(*std::move(r));
  }
  // Collapsed runs: against the same layout on half the nodes.
  std::map<std::string, double> by_layout;  // model|nodes|layout -> tokens/s
  const auto key = [](const SweepRow& r, int64_t nodes) {
    return absl::StrCat(r.workload.model.layers, "x", r.workload.model.hidden,
                        "|", nodes, "|", r.layout.tp, ",", r.layout.pp, ",",
                        r.layout.zero, ",", r.layout.micro_batch);
  };
  for (const SweepRow& r : sweep.rows) {
    if (r.ran) by_layout[key(r, r.nodes)] = r.measured_tokens_per_s_per_gpu;
  }
  for (SweepRow& r : sweep.rows) {
    if (!r.ran || r.nodes < 2 || r.nodes % 2 != 0) continue;
    const auto half = by_layout.find(key(r, r.nodes / 2));
    r.collapsed = half != by_layout.end() &&
                  r.measured_tokens_per_s_per_gpu < 0.5 * half->second;
  }
  // The cluster's nodes (8 H100 each in the Playbook's sweep).
  const int64_t gpus_per_node =
      sweep.rows.empty() ? 8 : sweep.rows.front().workload.cluster.gpus_per_node;
  absl::StatusOr<std::vector<CollectiveMeasurement>> measured =
      SweepCollectives(file, gpus_per_node);
  if (!measured.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", measured.status().message()));
  }
  if (!measured->empty()) {
    sweep.collectives =
        std::make_shared<MeasuredCollectives>(*std::move(measured));
  }
  return sweep;
}

SweepReport EvaluateLayoutSweep(const LayoutSweep& sweep,
                                const SweepCalibration& calibration) {
  SweepReport report;
  for (const SweepRow& row : sweep.rows) {
    SweepPrediction p;
    p.row = &row;
    const Calibration c = calibration(row);
    absl::StatusOr<ResolvedWorkload> resolved = ResolveWorkload(row.workload);
    if (resolved.ok()) {
      p.evaluation = PredictLayout(*resolved, row.layout, c);
    } else {
      p.evaluation.layout = row.layout;
      p.evaluation.reason = std::string(resolved.status().message());
    }
    p.expressible = p.evaluation.prediction.step_time_s > 0;
    if (p.expressible && row.ran) {
      p.error = p.evaluation.prediction.tokens_per_s_per_gpu /
                    row.measured_tokens_per_s_per_gpu -
                1;
      if (row.measured_peak_allocated_gib && resolved.ok()) {
        if (std::optional<double> bytes =
                StageZeroAllocatedBytes(*resolved, p.evaluation, c)) {
          p.memory_ratio = *bytes / (*row.measured_peak_allocated_gib * kGiB);
        }
      }
    }
    report.rows.push_back(p);
  }
  std::map<std::string, std::vector<const SweepPrediction*>> by_group;
  for (const SweepPrediction& p : report.rows) by_group[p.row->group].push_back(&p);
  for (const auto& [name, rows] : by_group) {
    report.groups.push_back(ScoreGroup(name, rows));
  }
  std::vector<const SweepPrediction*> fit_rows, check_rows, all_rows;
  for (const SweepPrediction& p : report.rows) {
    (p.row->nodes <= 2 ? fit_rows : check_rows).push_back(&p);
    all_rows.push_back(&p);
  }
  std::vector<const SweepGroupScore*> fit_groups, check_groups, all_groups;
  for (const SweepGroupScore& g : report.groups) {
    (g.nodes <= 2 ? fit_groups : check_groups).push_back(&g);
    all_groups.push_back(&g);
  }
  report.fit = Score(fit_rows, fit_groups);
  report.check = Score(check_rows, check_groups);
  report.all = Score(all_rows, all_groups);
  // The check again without the collapsed rows, groups re-ranked.
  std::map<std::string, std::vector<const SweepPrediction*>> kept_by_group;
  std::vector<const SweepPrediction*> kept_rows;
  for (const SweepPrediction* p : check_rows) {
    if (p->row->collapsed) {
      ++report.collapsed_rows;
      continue;
    }
    kept_rows.push_back(p);
    kept_by_group[p->row->group].push_back(p);
  }
  std::vector<SweepGroupScore> kept_groups;
  for (const auto& [name, rows] : kept_by_group) {
    kept_groups.push_back(ScoreGroup(name, rows));
  }
  std::vector<const SweepGroupScore*> kept_group_ptrs;
  for (const SweepGroupScore& g : kept_groups) kept_group_ptrs.push_back(&g);
  report.check_without_collapsed = Score(kept_rows, kept_group_ptrs);
  return report;
}

void PrintSweepReport(const SweepReport& r, std::ostream& out) {
  out << absl::StrFormat("%-22s %5s %6s %8s %9s  %s\n", "group", "meas",
                         "rho", "top/best", "med|err|", "top pick");
  for (const SweepGroupScore& g : r.groups) {
    out << absl::StrFormat("%-22s %5d %6.2f %8.2f %8.1f%%  %s\n", g.group,
                           g.measured, g.spearman, g.top_pick_ratio,
                           100 * g.median_abs_error, g.top_pick);
  }
  auto line = [&](const char* name, const SweepScores& s) {
    out << absl::StrFormat(
        "%-6s groups %d: rho %.2f, top pick within 5%% in %d; rows measured "
        "%d, median |error| %.1f%% (signed %+.1f%%), not expressible %d; "
        "ran but called infeasible %d, failed but called feasible %d of %d\n",
        name, s.groups, s.mean_spearman, s.top_pick_within_5pct,
        s.measured_rows, 100 * s.median_abs_error, 100 * s.median_error,
        s.inexpressible_rows, s.ran_called_infeasible,
        s.failed_called_feasible, s.failed_rows);
    out << "       stage-0 peak memory (predicted tensors / the source's GPU"
           " memory), median by pp:";
    for (const auto& [pp, ratio] : s.median_memory_ratio_by_pp) {
      out << absl::StrFormat(" pp%d %.2f (%d)", pp, ratio,
                             s.memory_rows_by_pp.at(pp));
    }
    out << "\n";
  };
  line("fit", r.fit);
  line("check", r.check);
  out << absl::StrFormat(
      "       without its %d collapsed rows (under half the same layout's "
      "tokens/s per GPU on half the nodes):\n",
      r.collapsed_rows);
  line("check'", r.check_without_collapsed);
  line("all", r.all);
}

}  // namespace tessera::costmodel
