#include "cli/report_html.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/recommendation_output.h"
#include "cli/service_names.h"
#include "cli/time_text.h"
#include "google/protobuf/util/json_util.h"

namespace tessera::cli {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

constexpr char kStyle[] = R"(<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 78em;
       color: #1d232a; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { margin-top: 1.8em; }
table { border-collapse: collapse; margin: 0.6em 0; }
th, td { border-bottom: 1px solid #d8dde3; padding: 0.25em 0.7em;
         text-align: left; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.measured { color: #0b6e3c; font-weight: 600; }
.predicted { color: #8a5a00; font-weight: 600; }
.muted { color: #67717d; } pre { background: #f4f6f8; padding: 0.8em; }
svg text { font: 11px system-ui, sans-serif; fill: #3b444e; }
</style>
)";

// Four significant digits, whole numbers from 10^4 up ("51234", not
// "5.123e+04"): tokens/s read better that way.
std::string Num(double v) {
  if (!std::isfinite(v)) return "—";
  if (std::abs(v) >= 1e4 && std::abs(v) < 1e15) {
    return absl::StrFormat("%.0f", v);
  }
  return absl::StrFormat("%.4g", v);
}

std::string Pct(double fraction) {
  return std::isfinite(fraction) ? absl::StrFormat("%.1f%%", 100 * fraction)
                                 : "—";
}

std::string Cell(absl::string_view text, bool number = false) {
  return absl::StrCat(number ? "<td class=\"n\">" : "<td>", HtmlEscape(text),
                      "</td>");
}

std::string Label(v1::Provenance p) {
  const bool measured = p == v1::MEASURED;
  return absl::StrCat("<span class=\"", measured ? "measured" : "predicted",
                      "\">", ProvenanceName(p), "</span>");
}

// A row of a two-column table: what, value (escaped) and its label (HTML).
std::string Row(absl::string_view what, absl::string_view value,
                absl::string_view label_html = "") {
  return absl::StrCat("<tr><th>", HtmlEscape(what), "</th>", Cell(value, true),
                      "<td>", label_html, "</td></tr>\n");
}

std::string StudySection(const v1::GetStudyResponse& s,
                         const v1::Recommendation& r, absl::Time generated) {
  const v1::StudySummary& m = s.study();
  std::string html =
      absl::StrCat("<h1>Tessera study ", m.id(), ": ", HtmlEscape(m.name()),
                   "</h1>\n", "<p class=\"muted\">generated ",
                   HtmlEscape(FormatUnixMs(absl::ToUnixMillis(generated))),
                   r.final() ? "" : "; the study is still running: provisional",
                   "</p>\n", "<table>\n");
  absl::StrAppend(
      &html, Row("state", StudyStateName(m.state())),
      m.state_reason().empty() ? "" : Row("why", m.state_reason()),
      Row("model", m.model()),
      Row("cluster",
          absl::StrCat(m.nodes(), " nodes x ", m.gpus_per_node(), " ",
                       r.gpu_name().empty() ? m.gpu() : r.gpu_name())),
      Row("global batch",
          absl::StrCat(s.spec().training().global_batch(), " sequences of ",
                       s.spec().training().seq_len(), " tokens")),
      Row("trials",
          absl::StrCat(m.trials_done(), " of ", m.trials_total(), " reported, ",
                       m.trials_running(), " running")),
      Row("created", FormatUnixMs(m.created_unix_ms())),
      Row("updated", FormatUnixMs(m.updated_unix_ms())), "</table>\n");
  return html;
}

std::string FullRunText(const v1::FullRun& f) {
  return absl::StrFormat("%.3g days, %.3g MWh, %.4g GPU-hours", f.days(),
                         f.energy_mwh(), f.gpu_hours());
}

std::string LayoutCard(absl::string_view title, const v1::RecommendedLayout& l,
                       bool has_full_run) {
  std::string html = absl::StrCat("<h3>", HtmlEscape(title), ": <code>",
                                  HtmlEscape(CompactLayout(l.layout())),
                                  "</code></h3>\n<table>\n");
  const std::string measured_by =
      l.provenance() == v1::MEASURED
          ? absl::StrCat(Label(l.provenance()), " (trial ", l.trial_id(), ")")
          : Label(l.provenance());
  absl::StrAppend(
      &html, Row("tokens/s", Num(l.tokens_per_s()), measured_by),
      Row("step time", absl::StrCat(Num(l.step_time_s()), " s"), measured_by),
      Row("MFU", Pct(l.mfu()), measured_by),
      Row("memory per GPU", absl::StrCat(Num(l.memory_gib_per_gpu()), " GiB")),
      Row("exposed communication", absl::StrCat(Num(l.exposed_comm_s()), " s")),
      Row("pipeline bubble", absl::StrCat(Num(l.bubble_s()), " s"),
          Label(v1::PREDICTED)),
      Row("tokens/J",
          l.tokens_per_joule() > 0 ? Num(l.tokens_per_joule()) : "—",
          l.tokens_per_joule() > 0 ? Label(l.energy_provenance()) : ""),
      Row("the calibrated model predicted",
          absl::StrCat(Num(l.predicted().tokens_per_s()), " tokens/s, ",
                       Num(l.predicted().watts_per_gpu()), " W per GPU"),
          Label(v1::PREDICTED)));
  if (has_full_run) {
    absl::StrAppend(
        &html, Row("full run", FullRunText(l.full_run()),
                   absl::StrCat("from ", Label(l.provenance()), " tokens/s")));
  }
  absl::StrAppend(&html, "</table>\n<p>", HtmlEscape(l.why()), "</p>\n");
  return html;
}

std::string RecommendationSection(const v1::Recommendation& r,
                                  bool has_full_run) {
  std::string html = "<h2>Recommendation</h2>\n";
  if (!r.has_best_throughput()) {
    return html + "<p>No recommendation yet.</p>\n";
  }
  absl::StrAppend(
      &html, LayoutCard("Best throughput", r.best_throughput(), has_full_run));
  if (r.has_best_energy() && CompactLayout(r.best_energy().layout()) !=
                                 CompactLayout(r.best_throughput().layout())) {
    absl::StrAppend(&html,
                    LayoutCard("Best energy", r.best_energy(), has_full_run));
  } else {
    absl::StrAppend(&html, "<p>Best energy: the same layout.</p>\n");
  }
  return html;
}

std::string ParetoSection(const v1::Recommendation& r) {
  std::string html =
      "<h2>Pareto front: tokens/s against tokens/J</h2>\n"
      "<p class=\"muted\">filled: tokens/s measured by a trial; hollow: "
      "predicted by the calibrated model</p>\n";
  std::vector<ScatterPoint> points;
  std::string rows;
  for (const v1::RecommendedLayout& l : r.pareto()) {
    const std::string layout = CompactLayout(l.layout());
    points.push_back({.x = l.tokens_per_s(),
                      .y = l.tokens_per_joule(),
                      .label = layout,
                      .filled = l.provenance() == v1::MEASURED});
    absl::StrAppend(&rows, "<tr>", Cell(Num(l.tokens_per_s()), true), "<td>",
                    Label(l.provenance()), "</td>",
                    Cell(Num(l.tokens_per_joule()), true), "<td>",
                    Label(l.energy_provenance()), "</td><td><code>",
                    HtmlEscape(layout), "</code></td></tr>\n");
  }
  absl::StrAppend(&html, ScatterSvg(points, "tokens/s", "tokens/J", false),
                  "<table><tr><th>tokens/s</th><th></th><th>tokens/J</th>"
                  "<th></th><th>layout</th></tr>\n",
                  rows, "</table>\n");
  return html;
}

std::string CalibrationCheckSection(const std::vector<v1::Trial>& trials) {
  std::vector<ScatterPoint> points;
  for (const v1::Trial& t : trials) {
    if (t.state() != v1::TRIAL_OK) continue;
    points.push_back({.x = t.predicted().tokens_per_s(),
                      .y = t.measured().tokens_per_s(),
                      .label = absl::StrCat("trial ", t.id(), ": ",
                                            CompactLayout(t.layout()))});
  }
  return absl::StrCat(
      "<h2>Measured against predicted</h2>\n"
      "<p class=\"muted\">each ok trial's measured tokens/s against what the "
      "cost model predicted when the trial was queued (the calibration of "
      "that moment); on the line, the model was exact</p>\n",
      ScatterSvg(points, "predicted tokens/s", "measured tokens/s", true));
}

std::string TrialsSection(const std::vector<v1::Trial>& trials) {
  std::string html = absl::StrCat(
      "<h2>Trials (", trials.size(),
      ")</h2>\n<table><tr><th>id</th><th>rung</th><th>state</th>"
      "<th>layout</th><th>steps</th><th>tokens/s</th><th>predicted "
      "tokens/s</th><th>MFU</th><th>memory</th><th>exposed comm</th>"
      "<th>watts</th><th>agents</th><th>reason</th></tr>\n");
  for (const v1::Trial& t : trials) {
    const bool ok = t.state() == v1::TRIAL_OK;
    const v1::TrialMetrics& m = t.measured();
    std::string agents;
    for (const std::string& a : t.agents()) {
      absl::StrAppend(&agents, agents.empty() ? "" : ", ", a);
    }
    absl::StrAppend(
        &html, "<tr>", Cell(absl::StrCat(t.id()), true),
        Cell(absl::StrCat(t.rung()), true), Cell(TrialStateName(t.state())),
        "<td><code>", HtmlEscape(CompactLayout(t.layout())), "</code></td>",
        Cell(ok ? absl::StrCat(m.steps()) : "—", true),
        Cell(ok ? Num(m.tokens_per_s()) : "—", true),
        Cell(Num(t.predicted().tokens_per_s()), true),
        Cell(ok ? Pct(m.mfu()) : "—", true),
        Cell(ok ? absl::StrFormat(
                      "%.3g GiB",
                      static_cast<double>(m.peak_memory_bytes()) / kGiB)
                : "—",
             true),
        Cell(ok ? absl::StrCat(Num(m.exposed_comm_s()), " s") : "—", true),
        Cell(ok && m.has_watts_per_gpu()
                 ? absl::StrCat(Num(m.watts_per_gpu()), " W")
                 : "—",
             true),
        Cell(agents), Cell(t.reason()), "</tr>\n");
  }
  return html + "</table>\n";
}

std::string CalibrationSection(const v1::Recommendation& r) {
  std::string html =
      absl::StrCat("<h2>Calibration</h2>\n<p>", HtmlEscape(CalibrationLine(r)),
                   "<br>", HtmlEscape(GpuLine(r)), "</p>\n");
  if (r.calibration().empty()) return html;
  // Sorted by name (the proto map has no order).
  const std::map<std::string, double> sorted(r.calibration().begin(),
                                             r.calibration().end());
  absl::StrAppend(&html,
                  "<table><tr><th>coefficient</th><th>value</th></tr>\n");
  for (const auto& [name, value] : sorted) {
    absl::StrAppend(&html, "<tr>", Cell(name), Cell(Num(value), true),
                    "</tr>\n");
  }
  return html + "</table>\n";
}

std::string SpecSection(const v1::StudySpec& spec) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(spec, &json, options).ok()) {
    json = spec.DebugString();
  }
  return absl::StrCat("<h2>Spec</h2>\n<pre>", HtmlEscape(json), "</pre>\n");
}

// Round tick spacing: 1, 2 or 5 times a power of ten, about 5 ticks to `max`.
double TickStep(double max) {
  const double raw = max / 5;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

}  // namespace

std::string HtmlEscape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string ScatterSvg(const std::vector<ScatterPoint>& points,
                       absl::string_view x_label, absl::string_view y_label,
                       bool diagonal) {
  std::vector<const ScatterPoint*> drawn;
  double x_max = 0, y_max = 0;
  for (const ScatterPoint& p : points) {
    if (!(std::isfinite(p.x) && std::isfinite(p.y) && p.x > 0 && p.y > 0)) {
      continue;
    }
    drawn.push_back(&p);
    x_max = std::max(x_max, p.x);
    y_max = std::max(y_max, p.y);
  }
  if (drawn.empty()) {
    return absl::StrCat(
        "<p class=\"muted\">Nothing to plot: no point has both ",
        HtmlEscape(x_label), " and ", HtmlEscape(y_label), ".</p>\n");
  }
  if (diagonal) x_max = y_max = std::max(x_max, y_max);
  const double x_step = TickStep(x_max * 1.05);
  const double y_step = TickStep(y_max * 1.05);
  x_max = x_step * std::ceil(x_max * 1.05 / x_step);
  y_max = y_step * std::ceil(y_max * 1.05 / y_step);
  constexpr double kW = 560, kH = 360, kLeft = 70, kRight = 20, kTop = 15,
                   kBottom = 45;
  const auto sx = [&](double x) {
    return kLeft + x / x_max * (kW - kLeft - kRight);
  };
  const auto sy = [&](double y) {
    return kH - kBottom - y / y_max * (kH - kTop - kBottom);
  };
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
      "height=\"%.0f\" role=\"img\">\n"
      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\"/>"
      "\n<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
      "stroke=\"#555\"/>\n",
      kW, kH, sx(0), sy(0), sx(x_max), sy(0), sx(0), sy(0), sx(0), sy(y_max));
  for (double x = x_step; x <= x_max * (1 + 1e-9); x += x_step) {
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                          "y2=\"%.1f\" stroke=\"#555\"/><text x=\"%.1f\" "
                          "y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                          sx(x), sy(0), sx(x), sy(0) + 4, sx(x), sy(0) + 16,
                          Num(x));
  }
  for (double y = y_step; y <= y_max * (1 + 1e-9); y += y_step) {
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                          "y2=\"%.1f\" stroke=\"#555\"/><text x=\"%.1f\" "
                          "y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                          sx(0) - 4, sy(y), sx(0), sy(y), sx(0) - 6, sy(y) + 4,
                          Num(y));
  }
  absl::StrAppendFormat(
      &svg,
      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n"
      "<text x=\"14\" y=\"%.1f\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 14 %.1f)\">%s</text>\n",
      (sx(0) + sx(x_max)) / 2, kH - 8, HtmlEscape(x_label),
      (sy(0) + sy(y_max)) / 2, (sy(0) + sy(y_max)) / 2, HtmlEscape(y_label));
  if (diagonal) {
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                          "y2=\"%.1f\" stroke=\"#aab\" "
                          "stroke-dasharray=\"4 3\"/>\n",
                          sx(0), sy(0), sx(x_max), sy(y_max));
  }
  for (const ScatterPoint* p : drawn) {
    absl::StrAppendFormat(
        &svg,
        "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\" "
        "stroke=\"#1f5fa8\" stroke-width=\"1.5\"><title>%s (%s, %s)</title>"
        "</circle>\n",
        sx(p->x), sy(p->y), p->filled ? "#1f5fa8" : "white",
        HtmlEscape(p->label), Num(p->x), Num(p->y));
  }
  return svg + "</svg>\n";
}

std::string RenderStudyReportHtml(const StudyReport& report) {
  const v1::StudySummary& m = report.study.study();
  const bool has_full_run = report.study.spec().training().total_tokens() > 0;
  return absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>Tessera study ",
      m.id(), ": ", HtmlEscape(m.name()), "</title>\n", kStyle,
      "</head>\n<body>\n",
      StudySection(report.study, report.recommendation, report.generated),
      RecommendationSection(report.recommendation, has_full_run),
      ParetoSection(report.recommendation),
      CalibrationCheckSection(report.trials), TrialsSection(report.trials),
      CalibrationSection(report.recommendation),
      SpecSection(report.study.spec()), "</body>\n</html>\n");
}

}  // namespace tessera::cli
