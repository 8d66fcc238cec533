#include "cli/replay_output.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/svg_chart.h"
#include "cli/text_table.h"
#include "core/layout_json.h"

namespace tessera::cli {
namespace {

using Json = nlohmann::json;
using replay::GroupScore;
using replay::StrategyReport;
using replay::SweepReplayReport;

Json Optional(const std::optional<double>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// "3", "12.1" (an expectation), "—" for never.
std::string Trials(const std::optional<double>& v) {
  if (!v) return "never";
  if (std::fabs(*v - std::round(*v)) < 1e-9) {
    return absl::StrFormat("%.0f", *v);
  }
  return absl::StrFormat("%.1f", *v);
}

std::string Percent(double v) { return absl::StrFormat("%.1f%%", 100 * v); }

std::string CompactLayout(const Layout& l) {
  std::string s = absl::StrFormat("tp%d pp%d", l.tp, l.pp);
  if (l.vpp > 1) absl::StrAppend(&s, absl::StrFormat(" vpp%d", l.vpp));
  if (l.cp > 1) absl::StrAppend(&s, absl::StrFormat(" cp%d", l.cp));
  absl::StrAppend(&s, absl::StrFormat(" dp%d mb%d z%d", l.dp, l.micro_batch,
                                      l.zero));
  if (l.recompute != Recompute::kNone) {
    absl::StrAppend(&s, " ", RecomputeName(l.recompute));
  }
  return s;
}

Json GroupJson(const GroupScore& g) {
  const replay::SearchScore& s = g.score;
  Json j{{"group", g.group},
         {"layouts", g.layouts},
         {"best_tokens_per_s_per_gpu", g.best_tokens_per_s_per_gpu},
         {"trials_to_1pct", Optional(s.trials_to_1pct)},
         {"trials_to_2pct", Optional(s.trials_to_2pct)},
         {"trials_to_5pct", Optional(s.trials_to_5pct)},
         {"failed_trials", s.failed_trials},
         {"trials", s.trials},
         {"gpu_hours_to_2pct", s.gpu_hours_to_2pct},
         {"gpu_hours", s.gpu_hours},
         {"regret_after", s.regret_after},
         {"final_regret", Optional(g.final_regret)}};
  if (g.study) {
    const replay::StudyReplay& st = *g.study;
    j["state"] = st.state;
    j["reason"] = st.reason;
    j["recommended"] =
        st.recommended ? LayoutToJson(*st.recommended) : Json(nullptr);
    j["recommended_measured"] = st.recommended_measured;
    Json log = Json::array();
    for (const replay::ReplayedTrial& t : st.trials) {
      log.push_back(Json{
          {"trial_id", t.trial_id},
          {"rung", t.rung},
          {"steps", t.steps},
          {"layout", LayoutToJson(t.layout)},
          {"status", std::string(TrialStatusName(t.outcome))},
          {"measured_tokens_per_s_per_gpu", t.measured_tokens_per_s_per_gpu},
          {"true_tokens_per_s_per_gpu", t.true_tokens_per_s_per_gpu},
          {"gpu_seconds", t.gpu_seconds}});
    }
    j["trial_log"] = std::move(log);
    j["events"] = st.events;
  }
  return j;
}

Json SummaryJson(const replay::StrategySummary& s) {
  return Json{{"groups", s.groups},
              {"within_2pct_in_3", s.within_2pct_in_3},
              {"median_trials_to_2pct", Optional(s.median_trials_to_2pct)},
              {"max_trials_to_2pct", Optional(s.max_trials_to_2pct)},
              {"never_within_2pct", s.never_within_2pct},
              {"failed_trials", s.failed_trials},
              {"gpu_hours_to_2pct", s.gpu_hours},
              {"mean_final_regret", Optional(s.mean_final_regret)}};
}

// One table: a row per group, a column per strategy, the cell `cell`.
void PrintByGroup(const SweepReplayReport& r, const std::string& title,
                  const std::function<std::string(const GroupScore&)>& cell,
                  size_t width, std::ostream& out) {
  std::vector<TableColumn> columns = {
      TableColumn("group").Cut(24), {"layouts", kRight},
      TableColumn("best tok/s/GPU", kRight).Short("best")};
  for (const StrategyReport& s : r.strategies) {
    columns.push_back({s.name, kRight});
  }
  TextTable table(columns);
  const size_t groups =
      r.strategies.empty() ? 0 : r.strategies.front().groups.size();
  for (size_t i = 0; i < groups; ++i) {
    const GroupScore& first = r.strategies.front().groups[i];
    std::vector<std::string> row = {
        first.group, absl::StrCat(first.layouts),
        absl::StrFormat("%.0f", first.best_tokens_per_s_per_gpu)};
    for (const StrategyReport& s : r.strategies) {
      row.push_back(cell(s.groups[i]));
    }
    table.AddRow(std::move(row));
  }
  out << title << "\n";
  table.Print(out, width);
  out << "\n";
}

}  // namespace

Json ReplayReportJson(const SweepReplayReport& r) {
  Json strategies = Json::array();
  for (const StrategyReport& s : r.strategies) {
    Json groups = Json::array();
    for (const GroupScore& g : s.groups) groups.push_back(GroupJson(g));
    strategies.push_back(Json{{"name", s.name},
                              {"summary", SummaryJson(s.summary)},
                              {"groups", std::move(groups)}});
  }
  return Json{{"source", r.source},
              {"seed", r.seed},
              {"noise_log_sd", r.noise_log_sd},
              {"skipped", r.skipped},
              {"strategies", std::move(strategies)}};
}

void PrintReplayReport(const SweepReplayReport& r, size_t width, bool trials,
                       std::ostream& out) {
  const size_t groups =
      r.strategies.empty() ? 0 : r.strategies.front().groups.size();
  out << absl::StrFormat(
      "replay of %s: %d groups, seed %d, trial noise %.1f%% (log sd)\n",
      r.source, groups, r.seed, 100 * r.noise_log_sd);
  if (!r.skipped.empty()) {
    out << r.skipped.size() << " rows or groups left out (the first: "
        << r.skipped.front() << "; -o json lists them)\n";
  }
  out << "A search holds the layout it measured fastest; 'random' is the "
         "expected value.\n\n";
  PrintByGroup(
      r, "trials until the held layout is within 2% of the group's best:",
      [](const GroupScore& g) { return Trials(g.score.trials_to_2pct); },
      width, out);
  PrintByGroup(
      r, "trials until within 5% / 1%:",
      [](const GroupScore& g) {
        return absl::StrCat(Trials(g.score.trials_to_5pct), " / ",
                            Trials(g.score.trials_to_1pct));
      },
      width, out);
  PrintByGroup(
      r, "failed trials until within 2% (all trials run, when never):",
      [](const GroupScore& g) {
        return std::fabs(g.score.failed_trials -
                         std::round(g.score.failed_trials)) < 1e-9
                   ? absl::StrFormat("%.0f", g.score.failed_trials)
                   : absl::StrFormat("%.1f", g.score.failed_trials);
      },
      width, out);

  TextTable summary({TableColumn("overall").Cut(30), {"groups", kRight},
                     TableColumn("<=3 trials to 2%", kRight).Short("<=3"),
                     TableColumn("median", kRight),
                     TableColumn("worst", kRight),
                     TableColumn("failed", kRight),
                     TableColumn("GPU-h to 2%", kRight).Short("GPU-h"),
                     TableColumn("final regret", kRight).Short("regret")});
  for (const StrategyReport& s : r.strategies) {
    const replay::StrategySummary& m = s.summary;
    summary.AddRow(
        {s.name, absl::StrCat(m.groups),
         absl::StrFormat("%d/%d", m.within_2pct_in_3, m.groups),
         Trials(m.median_trials_to_2pct),
         m.max_trials_to_2pct ? Trials(m.max_trials_to_2pct)
                              : absl::StrCat(m.never_within_2pct, " never"),
         absl::StrFormat("%.1f", m.failed_trials),
         absl::StrFormat("%.1f", m.gpu_hours),
         m.mean_final_regret ? Percent(*m.mean_final_regret) : "—"});
  }
  summary.Print(out, width);

  for (const StrategyReport& s : r.strategies) {
    bool any = false;
    for (const GroupScore& g : s.groups) any = any || g.study.has_value();
    if (!any) continue;
    out << "\n" << s.name << ": what each study ended with\n";
    TextTable ended({TableColumn("group").Cut(24),
                     TableColumn("trials", kRight),
                     TableColumn("recommended").Cut(24),
                     TableColumn("regret", kRight),
                     TableColumn("why it stopped").Drop(1).Cut(30)});
    for (const GroupScore& g : s.groups) {
      const replay::StudyReplay& st = *g.study;
      ended.AddRow(
          {g.group, absl::StrCat(st.trials.size()),
           st.recommended ? CompactLayout(*st.recommended) : "—",
           g.final_regret ? Percent(*g.final_regret) : "—",
           absl::StrCat(st.state, ": ", st.reason)});
    }
    ended.Print(out, width);
    if (!trials) continue;
    for (const GroupScore& g : s.groups) {
      out << "\n" << g.group << ":\n";
      TextTable log({{"trial", kRight}, {"rung", kRight}, {"layout"},
                     {"status"}, {"measured", kRight}, {"sweep", kRight}});
      for (const replay::ReplayedTrial& t : g.study->trials) {
        log.AddRow({absl::StrCat(t.trial_id), absl::StrCat(t.rung),
                    CompactLayout(t.layout),
                    std::string(TrialStatusName(t.outcome)),
                    t.measured_tokens_per_s_per_gpu > 0
                        ? absl::StrFormat("%.0f", t.measured_tokens_per_s_per_gpu)
                        : "—",
                    t.true_tokens_per_s_per_gpu > 0
                        ? absl::StrFormat("%.0f", t.true_tokens_per_s_per_gpu)
                        : "—"});
      }
      log.Print(out, width);
    }
  }
}

std::string ReplayRegretSvg(const SweepReplayReport& r) {
  static const char* kColors[] = {"#1f77b4", "#2ca02c", "#ff7f0e", "#7f7f7f",
                                  "#d62728"};
  std::vector<ChartSeries> series;
  size_t color = 0;
  for (const StrategyReport& s : r.strategies) {
    ChartSeries line;
    line.name = s.name;
    line.color = kColors[color++ % 5];
    size_t longest = 0;
    for (const GroupScore& g : s.groups) {
      longest = std::max(longest, g.score.regret_after.size());
    }
    for (size_t k = 0; k < longest; ++k) {
      // A search that stopped keeps what it held.
      double sum = 0;
      for (const GroupScore& g : s.groups) {
        const std::vector<double>& c = g.score.regret_after;
        sum += c.empty() ? 1 : c[std::min(k, c.size() - 1)];
      }
      ChartPoint p;
      p.x = static_cast<double>(k + 1);
      p.y = 100 * sum / static_cast<double>(s.groups.size());
      p.title = absl::StrFormat("%s after %d trials", s.name, k + 1);
      line.points.push_back(p);
    }
    series.push_back(std::move(line));
  }
  ChartOptions o;
  o.x_label = "trials";
  o.y_label = "mean regret over groups (% below the best)";
  o.y_from_zero = true;
  o.y_rules = {2};
  o.css_class = "replay-regret";
  return LineChartSvg(series, o);
}

}  // namespace tessera::cli
