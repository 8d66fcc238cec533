#include "cli/report_html.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/recommendation_output.h"
#include "cli/report_calibration.h"
#include "cli/report_plots.h"
#include "cli/service_names.h"
#include "cli/text_table.h"
#include "cli/time_text.h"
#include "core/units.h"
#include "google/protobuf/util/json_util.h"

namespace tessera::cli {
namespace {


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
svg.plot { display: block; margin: 0.6em 0; max-width: 100%; height: auto; }
svg .point-label { font-size: 10px; }
.scroll { overflow-x: auto; max-width: 100%; }
td code { white-space: normal; overflow-wrap: anywhere; }
td.reason { max-width: 28em; overflow-wrap: anywhere; }
td.meaning { font-size: 0.85em; color: #4b5560; max-width: 36em; }
tr.fitted td { background: #fff6df; }
p.note { color: #8a5a00; }
</style>
)";

// The commands' number format (cli/text_table.h Readable): three
// significant digits, whole from 100 up; "—" when not finite.
std::string Num(double v) { return std::isfinite(v) ? Readable(v) : "—"; }

// A measured or predicted quantity that is positive when known: "—" for 0
// (not measured, never "0").
std::string Measured(double v) { return v > 0 ? Num(v) : "—"; }

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
          absl::StrCat(CountOf(m.nodes(), "node", "nodes"), " x ",
                       m.gpus_per_node(), " ",
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
  return absl::StrCat(Readable(f.days()), " days, ",
                      ReadableEnergyMwh(f.energy_mwh()), ", ",
                      Readable(f.gpu_hours()), " GPU-hours");
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
      Row("MFU", l.mfu() > 0 ? Pct(l.mfu()) : "—", measured_by),
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

std::string TrialsSection(const std::vector<v1::Trial>& trials) {
  std::string html = absl::StrCat(
      "<h2>Trials (", trials.size(),
      ")</h2>\n<div class=\"scroll\"><table "
      "class=\"trials\"><tr><th>id</th><th>rung</th><th>state</th>"
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
        Cell(ok ? Measured(m.tokens_per_s()) : "—", true),
        Cell(Measured(t.predicted().tokens_per_s()), true),
        Cell(ok && m.mfu() > 0 ? Pct(m.mfu()) : "—", true),
        Cell(ok && m.peak_memory_bytes() > 0
                 ? absl::StrFormat(
                       "%.3g GiB",
                       static_cast<double>(m.peak_memory_bytes()) / kGiB)
                 : "—",
             true),
        Cell(ok && m.comm_s() > 0 ? absl::StrCat(Num(m.exposed_comm_s()), " s")
                                  : "—",
             true),
        Cell(ok && m.has_watts_per_gpu()
                 ? absl::StrCat(Num(m.watts_per_gpu()), " W")
                 : "—",
             true),
        Cell(agents), "<td class=\"reason\">", HtmlEscape(t.reason()),
        "</td></tr>\n");
  }
  return html + "</table></div>\n";
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

absl::string_view StudyPageStyle() { return kStyle; }

std::string StudyPageSections(const StudyReport& report) {
  const bool has_full_run = report.study.spec().training().total_tokens() > 0;
  return absl::StrCat(
      StudySection(report.study, report.recommendation, report.generated),
      RecommendationSection(report.recommendation, has_full_run),
      ParetoSection(report.recommendation),
      ScaleSection(report.recommendation),
      ErrorSection(report.trials, report.recommendation),
      ParallelCoordinatesSection(report.trials),
      StepCurvesSection(report.trials, StepSeries::kLoss),
      StepCurvesSection(report.trials, StepSeries::kStepTime),
      BreakdownSection(report.trials, report.breakdowns),
      TimelineSection(report.trials, report.generated),
      TrialsSection(report.trials),
      CalibrationSection(report.study, report.recommendation),
      SpecSection(report.study.spec()));
}

std::string RenderStudyReportHtml(const StudyReport& report) {
  const v1::StudySummary& m = report.study.study();
  return absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>Tessera study ",
      m.id(), ": ", HtmlEscape(m.name()), "</title>\n", kStyle,
      "</head>\n<body>\n", StudyPageSections(report), "</body>\n</html>\n");
}

}  // namespace tessera::cli
