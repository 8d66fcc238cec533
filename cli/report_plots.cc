#include "cli/report_plots.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/report_html.h"
#include "cli/service_names.h"
#include "cli/svg_chart.h"
#include "cli/text_table.h"
#include "cli/time_text.h"
#include "costmodel/search/scale_front.h"

namespace tessera::cli {
namespace {

// Line colours, one per trial in turn.
constexpr const char* kPalette[] = {"#1f5fa8", "#d9822b", "#2e8b57", "#b03a48",
                                    "#7b5ea7", "#3a9aa8", "#8c6d31", "#c2549d",
                                    "#5a6b7b", "#9aa82e"};

const char* Colour(size_t i) { return kPalette[i % std::size(kPalette)]; }

constexpr char kComputeColour[] = "#1f5fa8";
constexpr char kExposedColour[] = "#d9822b";
constexpr char kBubbleColour[] = "#7b5ea7";
constexpr char kRestColour[] = "#a3abb4";
constexpr char kWholeColour[] = "#5a6b7b";

// A positive, finite number; "—" for anything else (not measured).
std::string Value(double v) {
  return std::isfinite(v) && v > 0 ? Readable(v) : "—";
}

std::string Cell(absl::string_view text) {
  return absl::StrCat("<td class=\"n\">", HtmlEscape(text), "</td>");
}

std::string Seconds(double v) {
  return std::isfinite(v) && v > 0 ? absl::StrCat(Readable(v), " s") : "—";
}

// A part of a step that was measured or predicted: 0 is a value there (no
// pipeline, no bubble; communication fully hidden).
std::string PartSeconds(double v) {
  return std::isfinite(v) ? absl::StrCat(Readable(v), " s") : "—";
}

std::string TrialName(const v1::Trial& t) {
  return absl::StrCat("trial ", t.id(), " ", CompactLayout(t.layout()));
}

// The part of `step_s` that `parts` leave, when there is one worth showing.
double Rest(double step_s, double parts_s) {
  const double rest = step_s - parts_s;
  return rest > 1e-9 * step_s ? rest : 0;
}

}  // namespace

std::string ParetoSection(const v1::Recommendation& r) {
  std::string html =
      "<h2>Pareto front: tokens/s against tokens/J</h2>\n"
      "<p class=\"muted\">the layouts no other beats on both; filled: "
      "tokens/s measured by a trial, hollow: predicted by the calibrated "
      "model. The axes start near the front, not at 0.</p>\n";
  std::vector<const v1::RecommendedLayout*> front;
  for (const v1::RecommendedLayout& l : r.pareto()) front.push_back(&l);
  std::stable_sort(front.begin(), front.end(), [](auto* a, auto* b) {
    return a->tokens_per_s() < b->tokens_per_s();
  });
  ChartSeries line{.name = "", .color = "#1f5fa8"};
  std::string rows;
  for (const v1::RecommendedLayout* l : front) {
    const std::string layout = CompactLayout(l->layout());
    const bool measured = l->provenance() == v1::MEASURED;
    const std::string who =
        measured ? absl::StrCat(layout, " (trial ", l->trial_id(), ")")
                 : layout;
    const bool has_energy = l->tokens_per_joule() > 0;
    if (has_energy && l->tokens_per_s() > 0) {
      line.points.push_back(
          {.x = l->tokens_per_s(),
           .y = l->tokens_per_joule(),
           .title = absl::StrCat(who, ": ", Readable(l->tokens_per_s()),
                                 " tokens/s (", ProvenanceName(l->provenance()),
                                 "), ", Readable(l->tokens_per_joule()),
                                 " tokens/J (",
                                 ProvenanceName(l->energy_provenance()), ")"),
           .label = who,
           .filled = measured,
           .data = {
               {"layout", layout},
               {"tokens-per-s", ExactNumber(l->tokens_per_s())},
               {"tokens-per-joule", ExactNumber(l->tokens_per_joule())},
               {"provenance", std::string(ProvenanceName(l->provenance()))}}});
    }
    absl::StrAppend(
        &rows, "<tr><td><code>", HtmlEscape(layout), "</code></td>",
        Cell(Value(l->tokens_per_s())), "<td>", ProvenanceName(l->provenance()),
        "</td>", Cell(Value(l->tokens_per_joule())), "<td>",
        has_energy ? ProvenanceName(l->energy_provenance()) : "", "</td>",
        Cell(measured ? absl::StrCat(l->trial_id()) : "—"), "</tr>\n");
  }
  absl::StrAppend(
      &html,
      LineChartSvg({line}, {.x_label = "tokens/s (whole cluster)",
                            .y_label = "tokens/J",
                            .css_class = "plot pareto",
                            .legend = false}),
      "<table><tr><th>layout</th><th>tokens/s</th><th></th><th>tokens/J</th>"
      "<th></th><th>trial</th></tr>\n",
      rows, "</table>\n");
  return html;
}

std::string ScaleSection(const v1::Recommendation& r) {
  if (!r.has_scale() || r.scale().counts().empty()) return "";
  const v1::RecommendationScale& scale = r.scale();
  const bool budget = std::any_of(
      scale.counts().begin(), scale.counts().end(),
      [](const v1::ScaleSearchCount& c) { return c.has_full_run(); });
  // Days and MWh of the run, or hours and kWh per 1e9 tokens.
  const auto time_of = [&](const v1::ScaleSearchCount& c) {
    return budget ? c.full_run().days() : c.seconds_per_token() * 1e9 / 3600;
  };
  const auto energy_of = [&](const v1::ScaleSearchCount& c) {
    return budget ? c.full_run().energy_mwh()
                  : c.joules_per_token() * 1e9 / 3.6e6;
  };
  std::string html = absl::StrCat(
      "<h2>GPU count: time to train against energy</h2>\n"
      "<p class=\"muted\">each whole-node count searched of the cluster's ",
      costmodel::GroupedCount(scale.cluster_gpus()),
      " GPUs, at its best layout for the objective (", scale.objective(),
      "), predicted when the study chose its count; filled: on the front of "
      "time, energy and GPU-hours; the study's trials run at the chosen "
      "count (",
      costmodel::GroupedCount(scale.gpus()),
      " GPUs). The time axis is logarithmic.</p>\n");
  ChartSeries front{.name = "on the front", .color = "#1f5fa8"};
  ChartSeries others{.name = "other counts", .color = "#a3abb4", .line = false};
  std::vector<const v1::ScaleSearchCount*> by_time;
  for (const v1::ScaleSearchCount& c : scale.counts()) {
    if (c.skipped().empty()) by_time.push_back(&c);
  }
  std::stable_sort(by_time.begin(), by_time.end(),
                   [&](auto* a, auto* b) { return time_of(*a) < time_of(*b); });
  for (const v1::ScaleSearchCount* c : by_time) {
    const std::string gpus =
        absl::StrCat(costmodel::GroupedCount(c->gpus()), " GPUs");
    ChartPoint point{
        .x = time_of(*c),
        .y = energy_of(*c),
        .title = absl::StrCat(gpus, ", ", CompactLayout(c->layout())),
        .label = c->chosen() ? absl::StrCat(gpus, " (chosen)") : gpus,
        .filled = c->on_front(),
        .data = {{"gpus", absl::StrCat(c->gpus())},
                 {"on-front", c->on_front() ? "1" : "0"},
                 {"chosen", c->chosen() ? "1" : "0"}}};
    (c->on_front() ? front : others).points.push_back(std::move(point));
  }
  absl::StrAppend(
      &html,
      LineChartSvg(
          {front, others},
          {.x_label = budget ? "days to train" : "hours per 1e9 tokens",
           .y_label = budget ? "MWh" : "kWh per 1e9 tokens",
           .css_class = "plot scale",
           .x_log = true}),
      "<table><tr><th>nodes</th><th>GPUs</th><th>layout</th>"
      "<th>tokens/s per GPU</th><th>W per GPU</th><th>",
      budget ? "days" : "h per 1e9 tokens", "</th><th>",
      budget ? "MWh" : "kWh per 1e9 tokens", "</th><th></th></tr>\n");
  for (const v1::ScaleSearchCount& c : scale.counts()) {
    if (!c.skipped().empty()) {
      absl::StrAppend(&html, "<tr>", Cell(absl::StrCat(c.nodes())),
                      Cell(costmodel::GroupedCount(c.gpus())),
                      "<td colspan=\"6\">", HtmlEscape(c.skipped()),
                      "</td></tr>\n");
      continue;
    }
    absl::StrAppend(
        &html, "<tr>", Cell(absl::StrCat(c.nodes())),
        Cell(costmodel::GroupedCount(c.gpus())), "<td><code>",
        HtmlEscape(CompactLayout(c.layout())), "</code></td>",
        Cell(Value(c.tokens_per_s_per_gpu())), Cell(Value(c.watts_per_gpu())),
        Cell(Value(time_of(c))), Cell(Value(energy_of(c))), "<td>",
        c.chosen() ? "chosen" : (c.on_front() ? "front" : ""), "</td></tr>\n");
  }
  absl::StrAppend(&html, "</table>\n");
  return html;
}

std::string ErrorSection(const std::vector<v1::Trial>& trials,
                         const v1::Recommendation& r) {
  ChartSeries points{.name = "", .color = "#1f5fa8", .line = false};
  std::string rows;
  for (const v1::Trial& t : trials) {
    if (t.state() != v1::TRIAL_OK) continue;
    const double predicted = t.predicted().tokens_per_s();
    const double measured = t.measured().tokens_per_s();
    const bool both = predicted > 0 && measured > 0;
    const double error_pct = both ? 100 * (measured / predicted - 1) : NAN;
    if (both) {
      points.points.push_back(
          {.x = predicted,
           .y = error_pct,
           .title = absl::StrFormat(
               "%s: measured %s tokens/s, predicted %s: %+.1f%%", TrialName(t),
               Readable(measured), Readable(predicted), error_pct),
           .data = {{"trial", absl::StrCat(t.id())},
                    {"measured-tokens-per-s", ExactNumber(measured)},
                    {"predicted-tokens-per-s", ExactNumber(predicted)},
                    {"error-pct", ExactNumber(error_pct)}}});
    }
    absl::StrAppend(&rows, "<tr>", Cell(absl::StrCat(t.id())), "<td><code>",
                    HtmlEscape(CompactLayout(t.layout())), "</code></td>",
                    Cell(Value(measured)), Cell(Value(predicted)),
                    Cell(both ? absl::StrFormat("%+.1f%%", error_pct) : "—"),
                    "</tr>\n");
  }
  ChartOptions options{.x_label = "predicted tokens/s (when queued)",
                       .y_label = "measured / predicted - 1 (%)",
                       .y_rules = {0},
                       .css_class = "plot error",
                       .legend = false};
  std::string band;
  if (r.calibration_mape() > 0 && std::isfinite(r.calibration_mape())) {
    options.band_low = -100 * r.calibration_mape();
    options.band_high = 100 * r.calibration_mape();
    options.band_title = absl::StrFormat(
        "the calibrated model's step-time error (MAPE): ±%.1f%%",
        100 * r.calibration_mape());
    band = absl::StrFormat(
        "; shaded: ±%.1f%%, the calibrated model's step-time error (MAPE "
        "over %d samples)",
        100 * r.calibration_mape(), r.calibration_samples());
  }
  return absl::StrCat(
      "<h2>Measured against predicted</h2>\n"
      "<p class=\"muted\">each ok trial's measured tokens/s against what the "
      "cost model predicted when the trial was queued (the calibration of "
      "that moment), as the error in %: above the dashed line the trial ran "
      "faster than predicted",
      band, "</p>\n", LineChartSvg({points}, options),
      "<table><tr><th>trial</th><th>layout</th><th>measured tokens/s</th>"
      "<th>predicted tokens/s</th><th>error</th></tr>\n",
      rows, "</table>\n");
}

std::string StepCurvesSection(const std::vector<v1::Trial>& trials,
                              StepSeries which) {
  const bool loss = which == StepSeries::kLoss;
  const std::string what = loss ? "loss" : "step time";
  std::vector<ChartSeries> series;
  size_t colour = 0;
  // Trials whose values equal an earlier trial's at every step (the same
  // seed and data: loss curves often are) lie under its line: said, by
  // the trial they repeat.
  std::vector<std::pair<const v1::Trial*, std::vector<int64_t>>> firsts;
  auto same_values = [&](const v1::Trial& a, const v1::Trial& b) {
    const auto& x = loss ? a.measured().loss() : a.measured().step_times_s();
    const auto& y = loss ? b.measured().loss() : b.measured().step_times_s();
    if (x.size() != y.size()) return false;
    for (int i = 0; i < x.size(); ++i) {
      if (!(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i])))) {
        return false;
      }
    }
    return true;
  };
  for (const v1::Trial& t : trials) {
    const auto& values =
        loss ? t.measured().loss() : t.measured().step_times_s();
    if (values.empty()) continue;
    bool repeat = false;
    for (auto& [first, repeats] : firsts) {
      if (same_values(*first, t)) {
        repeats.push_back(t.id());
        repeat = true;
        break;
      }
    }
    if (!repeat) firsts.push_back({&t, {}});
    ChartSeries s{.name = TrialName(t),
                  .color = Colour(colour++),
                  .data = {{"trial", absl::StrCat(t.id())},
                           {"steps", absl::StrCat(values.size())}}};
    // Markers on every point while they stay readable, then on every k-th.
    const int stride = std::max(1, values.size() / 100);
    for (int i = 0; i < values.size(); ++i) {
      const double v = values[i];
      const bool warmup = i < t.warmup_steps();
      s.points.push_back(
          {.x = static_cast<double>(i),
           .y = v,
           .title = absl::StrCat(
               "trial ", t.id(), " step ", i, warmup ? " (warm-up)" : "", ": ",
               what, " ",
               std::isfinite(v) ? absl::StrCat(Readable(v), loss ? "" : " s")
                                : "—"),
           .filled = !warmup,
           .marker = i % stride == 0 || i + 1 == values.size(),
           .data = {{"step", absl::StrCat(i)},
                    {loss ? "loss" : "step-time-s", ExactNumber(v)}}});
    }
    series.push_back(std::move(s));
  }
  const std::string title = loss ? "Loss per step" : "Step time per step";
  const std::string css = loss ? "plot loss" : "plot step-time";
  if (series.empty()) {
    return absl::StrCat("<h2>", title,
                        "</h2>\n<p class=\"muted\">No trial "
                        "has a per-step ",
                        what, " stored.</p>\n");
  }
  std::string repeats_text;
  for (const auto& [first, repeats] : firsts) {
    if (repeats.empty()) continue;
    std::vector<std::string> ids;
    for (int64_t id : repeats) ids.push_back(absl::StrCat(id));
    absl::StrAppend(&repeats_text, "<p class=\"note identical\" data-trial=\"",
                    first->id(), "\" data-repeats=\"", absl::StrJoin(ids, ","),
                    "\">", repeats.size() == 1 ? "trial " : "trials ",
                    absl::StrJoin(ids, ", "), " had the same ", what,
                    " as trial ", first->id(),
                    " at every step: their lines lie under its line.</p>\n");
  }
  return absl::StrCat(
      "<h2>", title, "</h2>\n<p class=\"muted\">each trial's ", what,
      " at every step it ran, warm-up steps hollow; a gap where a step's ",
      what, " was not recorded</p>\n", repeats_text,
      LineChartSvg(series, {.x_label = "step",
                            .y_label = loss ? "loss" : "step time (s)",
                            .css_class = css}));
}

std::string ParallelCoordinatesSection(const std::vector<v1::Trial>& trials) {
  const std::vector<ParallelAxis> axes = {
      {.name = "tp"},
      {.name = "pp"},
      {.name = "cp"},
      {.name = "zero"},
      {.name = "micro-batch"},
      {.name = "recompute", .value_names = {"none", "selective", "full"}}};
  std::vector<const v1::Trial*> measured;
  double low = 0, high = 0;
  for (const v1::Trial& t : trials) {
    const double tps = t.measured().tokens_per_s();
    if (t.state() != v1::TRIAL_OK || !(tps > 0)) continue;
    low = measured.empty() ? tps : std::min(low, tps);
    high = measured.empty() ? tps : std::max(high, tps);
    measured.push_back(&t);
  }
  std::vector<ParallelLine> lines;
  for (const v1::Trial* t : measured) {
    const v1::Layout& l = t->layout();
    const std::string recompute = LayoutRecompute(l);
    const double r = recompute == "full" ? 2 : recompute == "selective" ? 1 : 0;
    const double tps = t->measured().tokens_per_s();
    const double fraction = high > low ? (tps - low) / (high - low) : 1;
    lines.push_back(
        {.values = {static_cast<double>(std::max<int64_t>(1, l.tp())),
                    static_cast<double>(std::max<int64_t>(1, l.pp())),
                    static_cast<double>(std::max<int64_t>(1, l.cp())),
                    static_cast<double>(l.zero()),
                    static_cast<double>(std::max<int64_t>(1, l.micro_batch())),
                    r},
         .color = SequentialColour(fraction),
         .title = absl::StrCat(TrialName(*t), ": ", Readable(tps),
                               " tokens/s measured"),
         .data = {{"trial", absl::StrCat(t->id())},
                  {"tp", absl::StrCat(std::max<int64_t>(1, l.tp()))},
                  {"pp", absl::StrCat(std::max<int64_t>(1, l.pp()))},
                  {"cp", absl::StrCat(std::max<int64_t>(1, l.cp()))},
                  {"zero", absl::StrCat(l.zero())},
                  {"micro-batch",
                   absl::StrCat(std::max<int64_t>(1, l.micro_batch()))},
                  {"recompute", recompute},
                  {"tokens-per-s", ExactNumber(tps)}}});
  }
  return absl::StrCat(
      "<h2>Layouts against throughput</h2>\n<p class=\"muted\">each ok "
      "trial as a line through its tensor, pipeline and context parallel "
      "degrees, ZeRO stage, micro-batch and recomputation, coloured by its "
      "measured tokens/s (dark: slowest, bright: fastest)</p>\n",
      ParallelCoordinatesSvg(axes, lines,
                             {.label = "tokens/s",
                              .low = low,
                              .high = high,
                              .color_of = &SequentialColour},
                             "plot parallel"));
}

std::string BreakdownSection(
    const std::vector<v1::Trial>& trials,
    const std::map<int64_t, TrialBreakdown>& breakdowns) {
  std::vector<StackedBar> bars;
  std::string rows;
  for (const v1::Trial& t : trials) {
    if (t.state() != v1::TRIAL_OK) continue;
    const v1::TrialMetrics& m = t.measured();
    const double step = m.step_time_median_s();
    // Measured: a command trial's framework may not time compute and
    // communication apart (0 both): then the step is shown whole.
    const bool split = m.compute_s() > 0 || m.exposed_comm_s() > 0;
    StackedBar measured{.label = absl::StrCat("trial ", t.id(), " measured"),
                        .data = {{"trial", absl::StrCat(t.id())},
                                 {"kind", "measured"},
                                 {"step-time-s", ExactNumber(step)}}};
    if (split) {
      measured.parts = {
          {"compute", m.compute_s(), kComputeColour},
          {"exposed communication", m.exposed_comm_s(), kExposedColour},
          {"rest of the step", Rest(step, m.compute_s() + m.exposed_comm_s()),
           kRestColour}};
    } else {
      measured.parts = {{"step, not broken down", step, kWholeColour}};
      measured.note = "parts not measured";
    }
    bars.push_back(measured);
    absl::StrAppend(
        &rows, "<tr>", Cell(absl::StrCat(t.id())), "<td>measured</td>",
        Cell(Seconds(step)), Cell(split ? PartSeconds(m.compute_s()) : "—"),
        Cell(split ? PartSeconds(m.exposed_comm_s()) : "—"), Cell("—"),
        Cell(split ? PartSeconds(Rest(step, m.compute_s() + m.exposed_comm_s()))
                   : "—"),
        "<td></td></tr>\n");

    StackedBar predicted{
        .label = absl::StrCat("trial ", t.id(), " predicted"),
        .data = {{"trial", absl::StrCat(t.id())}, {"kind", "predicted"}}};
    auto b = breakdowns.find(t.id());
    if (b != breakdowns.end() && b->second.predicted) {
      const v1::Prediction& p = b->second.prediction;
      const double parts = p.compute_s() + p.exposed_comm_s() + p.bubble_s();
      predicted.parts = {
          {"compute", p.compute_s(), kComputeColour},
          {"exposed communication", p.exposed_comm_s(), kExposedColour},
          {"pipeline bubble", p.bubble_s(), kBubbleColour},
          {"rest of the step", Rest(p.step_time_s(), parts), kRestColour}};
      predicted.data.push_back({"step-time-s", ExactNumber(p.step_time_s())});
      absl::StrAppend(
          &rows, "<tr>", Cell(absl::StrCat(t.id())), "<td>predicted</td>",
          Cell(Seconds(p.step_time_s())), Cell(PartSeconds(p.compute_s())),
          Cell(PartSeconds(p.exposed_comm_s())),
          Cell(PartSeconds(p.bubble_s())),
          Cell(PartSeconds(Rest(p.step_time_s(), parts))), "<td></td></tr>\n");
    } else {
      // No breakdown: the step time stored when the trial was queued.
      const double whole = t.predicted().step_time_s();
      const std::string why = b == breakdowns.end()
                                  ? "not predicted again (no run spec)"
                                  : b->second.why;
      predicted.parts = {{"step, not broken down", whole, kWholeColour}};
      predicted.note = "parts not predicted";
      predicted.data.push_back({"step-time-s", ExactNumber(whole)});
      absl::StrAppend(&rows, "<tr>", Cell(absl::StrCat(t.id())),
                      "<td>predicted when queued</td>", Cell(Seconds(whole)),
                      Cell("—"), Cell("—"), Cell("—"), Cell("—"), "<td>",
                      HtmlEscape(why), "</td></tr>\n");
    }
    bars.push_back(predicted);
  }
  if (bars.empty()) {
    return "<h2>Step-time breakdown</h2>\n<p class=\"muted\">No ok trial "
           "yet.</p>\n";
  }
  return absl::StrCat(
      "<h2>Step-time breakdown</h2>\n<p class=\"muted\">each ok trial's step "
      "(the median measured step) beside the cost model's, predicted again "
      "at the scale the trial ran with the study's calibration; the rest is "
      "what the named parts do not cover</p>\n",
      StackedBarsSvg(bars, "seconds per step", "plot breakdown"),
      "<table><tr><th>trial</th><th></th><th>step</th><th>compute</th>"
      "<th>exposed comm</th><th>bubble</th><th>rest</th><th></th></tr>\n",
      rows, "</table>\n");
}

std::string TimelineSection(const std::vector<v1::Trial>& trials,
                            absl::Time now) {
  int64_t origin_ms = 0;
  for (const v1::Trial& t : trials) {
    if (t.started_unix_ms() <= 0) continue;
    if (origin_ms == 0 || t.started_unix_ms() < origin_ms) {
      origin_ms = t.started_unix_ms();
    }
  }
  std::vector<TimelineLane> lanes;
  const auto lane_of = [&](const std::string& agent) -> TimelineLane& {
    for (TimelineLane& l : lanes) {
      if (l.name == agent) return l;
    }
    lanes.push_back({.name = agent});
    return lanes.back();
  };
  int unstarted = 0;
  for (const v1::Trial& t : trials) {
    if (t.started_unix_ms() <= 0) {
      ++unstarted;
      continue;
    }
    const bool open = t.finished_unix_ms() <= 0;
    const int64_t end_ms =
        open ? std::max(absl::ToUnixMillis(now), t.started_unix_ms())
             : t.finished_unix_ms();
    const double start_s = (t.started_unix_ms() - origin_ms) / 1000.0;
    const double end_s = (end_ms - origin_ms) / 1000.0;
    const v1::TrialState state = t.state();
    const char* colour = state == v1::TRIAL_OK          ? "#2e8b57"
                         : state == v1::TRIAL_LEASED    ? "#1f5fa8"
                         : state == v1::TRIAL_CANCELLED ? "#a3abb4"
                                                        : "#b03a48";
    std::vector<std::string> agents(t.agents().begin(), t.agents().end());
    if (agents.empty()) agents.push_back("(agent not recorded)");
    for (const std::string& agent : agents) {
      lane_of(agent).spans.push_back(
          {.start_s = start_s,
           .end_s = end_s,
           .text = absl::StrCat(t.id()),
           .title = absl::StrCat(
               TrialName(t), " (", TrialStateName(state), ") on ", agent, ": ",
               FormatUnixMs(t.started_unix_ms()), " to ",
               open ? "now (running)" : FormatUnixMs(t.finished_unix_ms()),
               ", ", Readable(end_s - start_s), " s"),
           .color = colour,
           .open = open,
           .data = {{"trial", absl::StrCat(t.id())},
                    {"state", std::string(TrialStateName(state))},
                    {"started-unix-ms", absl::StrCat(t.started_unix_ms())},
                    {"finished-unix-ms",
                     open ? "" : absl::StrCat(t.finished_unix_ms())}}});
    }
  }
  std::string html = absl::StrCat(
      "<h2>Trial timeline</h2>\n<p class=\"muted\">each trial from its "
      "lease's start to its report, on every agent that held it; green ok, "
      "red failed, blue (dashed) still running, grey cancelled",
      origin_ms > 0 ? absl::StrCat("; time from the first start, ",
                                   FormatUnixMs(origin_ms))
                    : "",
      unstarted > 0
          ? absl::StrCat("; ", unstarted, " trial", unstarted == 1 ? "" : "s",
                         " not started, not shown")
          : "",
      "</p>\n");
  return html + TimelineSvg(lanes, "seconds since the first trial started",
                            "plot timeline");
}

}  // namespace tessera::cli
