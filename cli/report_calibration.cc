#include "cli/report_calibration.h"

#include <cmath>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "cli/recommendation_output.h"
#include "cli/report_html.h"
#include "cli/svg_chart.h"
#include "cli/text_table.h"
#include "costmodel/calibration/calibration.h"
#include "service/study_queries.h"
#include "costmodel/stacks/stack_calibration.h"

namespace tessera::cli {
namespace {

// Whether `value` differs from `default_value` beyond rounding in storage.
bool Moved(double value, double default_value) {
  const double scale = std::max(std::abs(value), std::abs(default_value));
  return std::abs(value - default_value) > 1e-9 * std::max(scale, 1e-300);
}

// Where the value sits against the range a fit allows: "at its floor" or
// "at its ceiling" within 5% of the range's log width (or of the range for
// a range from 0), else "".
std::string AtBound(const costmodel::CoefficientInfo& info, double value) {
  const double lo = info.min_value, hi = info.max_value;
  if (!(hi > lo)) return "";
  const bool log_scale = lo > 0;
  const double span = log_scale ? std::log(hi / lo) : hi - lo;
  const double from_lo = log_scale ? std::log(value / lo) : value - lo;
  const double to_hi = log_scale ? std::log(hi / value) : hi - value;
  if (from_lo <= 0.05 * span) {
    return absl::StrCat("at its floor of ", Readable(lo));
  }
  if (to_hi <= 0.05 * span) {
    return absl::StrCat("at its ceiling of ", Readable(hi));
  }
  return "";
}

}  // namespace

std::string CalibrationSection(const v1::GetStudyResponse& study,
                               const v1::Recommendation& r) {
  std::string html =
      absl::StrCat("<h2>Calibration</h2>\n<p>", HtmlEscape(CalibrationLine(r)),
                   "<br>", HtmlEscape(GpuLine(r)), "</p>\n");
  if (r.calibration().empty()) return html;
  std::optional<costmodel::Calibration> defaults;
  if (absl::StatusOr<Workload> w = service::StudyWorkload(study.spec(), r);
      w.ok()) {
    if (absl::StatusOr<costmodel::Calibration> d =
            costmodel::DefaultCalibration(*w);
        d.ok()) {
      defaults = *d;
    }
  }
  std::map<std::string, const costmodel::CoefficientInfo*> infos;
  for (const costmodel::CoefficientInfo& info : costmodel::Calibration::Infos()) {
    infos[info.name] = &info;
  }
  // Sorted by name (the proto map has no order).
  const std::map<std::string, double> sorted(r.calibration().begin(),
                                             r.calibration().end());
  int fitted = 0;
  std::string rows;
  for (const auto& [name, value] : sorted) {
    std::optional<double> default_value;
    if (defaults.has_value()) {
      if (absl::StatusOr<double> d = defaults->Get(name); d.ok()) {
        default_value = *d;
      }
    }
    const bool moved =
        default_value.has_value() && Moved(value, *default_value);
    fitted += moved ? 1 : 0;
    auto info = infos.find(name);
    const costmodel::CoefficientInfo* i =
        info == infos.end() ? nullptr : info->second;
    const std::string bound = i == nullptr ? "" : AtBound(*i, value);
    const std::string unit =
        i == nullptr || i->unit.empty() ? "" : absl::StrCat(" ", i->unit);
    absl::StrAppend(
        &rows, "<tr class=\"", moved ? "fitted" : "default",
        "\" data-coefficient=\"", HtmlEscape(name), "\" data-value=\"",
        ExactNumber(value), "\" data-default-value=\"",
        default_value ? ExactNumber(*default_value) : "", "\" data-fitted=\"",
        default_value ? (moved ? "true" : "false") : "", "\"><td><code>",
        HtmlEscape(name), "</code></td><td class=\"n\">",
        HtmlEscape(absl::StrCat(Readable(value), unit)),
        "</td><td class=\"n\">",
        default_value ? HtmlEscape(absl::StrCat(Readable(*default_value), unit))
                      : "—",
        "</td><td>",
        !default_value ? "—"
        : moved        ? "<b>fitted</b>"
                       : "default",
        bound.empty() ? "" : absl::StrCat(" (", HtmlEscape(bound), ")"),
        "</td><td class=\"n\">",
        i == nullptr ? "—"
                     : HtmlEscape(absl::StrCat(Readable(i->min_value), " to ",
                                               Readable(i->max_value))),
        "</td><td class=\"meaning\">",
        i == nullptr ? "" : HtmlEscape(i->source), "</td></tr>\n");
  }
  absl::StrAppend(
      &html, "<p class=\"muted\">",
      defaults.has_value()
          ? absl::StrCat(fitted, " of ", sorted.size(),
                         " coefficients differ from the defaults of the ",
                         HtmlEscape(study.spec().training().stack().empty()
                                        ? "study's"
                                        : study.spec().training().stack()),
                         " stack on this GPU (fitted from the trials, or "
                         "imported); the others are the defaults. A fitted "
                         "value at its floor or ceiling is where the fit "
                         "stopped, not a measurement.")
          : "the defaults of the study's stack are not known here",
      "</p>\n<table class=\"calibration\"><tr><th>coefficient</th>"
      "<th>value</th><th>default</th><th>from</th><th>range</th>"
      "<th>meaning</th></tr>\n",
      rows, "</table>\n");
  return html;
}

}  // namespace tessera::cli
