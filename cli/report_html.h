// A study as one self-contained HTML page (`tessera report`): no script, no
// external resource, so that it can be mailed, attached to a ticket or
// archived beside the training run it chose.
//
// Sections: the study (state, workload, progress); the recommendation, both
// best layouts with every number labelled MEASURED or PREDICTED and the full
// run; the Pareto front of tokens/s against tokens/J, drawn (SVG) and
// tabulated; each ok trial's measured tokens/s against what the cost model
// predicted when it was queued (SVG, with the y = x line); every trial; the
// calibration; the spec as submitted. Every text that came from the planner
// is HTML-escaped.
//
//   StudyReport report{.study = study, .recommendation = rec,
//                      .trials = trials, .generated = absl::Now()};
//   std::string html = RenderStudyReportHtml(report);
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tessera/v1/service.pb.h"

namespace tessera::cli {

struct StudyReport {
  v1::GetStudyResponse study;  // summary and spec
  v1::Recommendation recommendation;
  std::vector<v1::Trial> trials;  // in the order the page lists them
  absl::Time generated;
};

// The whole page, "<!DOCTYPE html>" to "</html>".
std::string RenderStudyReportHtml(const StudyReport& report);

// `text` with &, <, >, " and ' replaced by their character references.
std::string HtmlEscape(absl::string_view text);

// One point of a scatter plot.
struct ScatterPoint {
  double x = 0;
  double y = 0;
  std::string label;   // shown on hover (<title>)
  bool filled = true;  // filled: measured; hollow: predicted
};

// An SVG scatter plot of the points with finite, positive coordinates, axes
// from zero with labelled ticks, and the y = x line when `diagonal`. Points
// that cannot be drawn are left out; with none left, a sentence that says
// so instead of an empty plot.
std::string ScatterSvg(const std::vector<ScatterPoint>& points,
                       absl::string_view x_label, absl::string_view y_label,
                       bool diagonal);

}  // namespace tessera::cli
