// A study as one self-contained HTML page (`tessera report`): no script, no
// external resource, so that it can be mailed, attached to a ticket or
// archived beside the training run it chose, and read offline.
//
// Sections: the study (state, workload, progress); the recommendation, both
// best layouts with every number labelled MEASURED or PREDICTED and the full
// run; the Pareto front of tokens/s against tokens/J as a line through
// labelled points; each ok trial's error against the cost model's
// prediction (measured / predicted - 1, in %) with the calibration's error
// band; the ok trials' knobs in parallel coordinates coloured by tokens/s;
// every trial's loss and step time per step; each ok trial's step
// broken down (compute, exposed communication, bubble, the rest), measured
// beside predicted; the trials' timeline per agent; every trial; the
// calibration, fitted coefficients marked against the stack's defaults
// (cli/report_calibration.h); the spec as submitted. The plots are inline SVG
// (cli/svg_chart.h): each mark carries the store's numbers in data-*
// attributes and a <title>. A number not measured shows as "—", never 0.
// Every text that came from the planner is HTML-escaped.
//
//   StudyReport report{.study = study, .recommendation = rec,
//                      .trials = trials, .generated = absl::Now()};
//   report.breakdowns = PredictTrialBreakdowns(trials, rec);
//   std::string html = RenderStudyReportHtml(report);
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cli/report_predictions.h"
#include "tessera/v1/service.pb.h"

namespace tessera::cli {

struct StudyReport {
  v1::GetStudyResponse study;  // summary and spec
  v1::Recommendation recommendation;
  std::vector<v1::Trial> trials;  // in the order the page lists them
  absl::Time generated;
  // Each ok trial's predicted step breakdown (cli/report_predictions.h); a
  // trial without one shows its stored predicted step time whole.
  std::map<int64_t, TrialBreakdown> breakdowns;
};

// The whole page, "<!DOCTYPE html>" to "</html>".
std::string RenderStudyReportHtml(const StudyReport& report);

// What is between the page's <body> and </body>: every section. The
// planner's dashboard (dashboard/) shows the same sections, redrawn as
// trials land. A report without a recommendation yet (recommendation left
// empty) says so where the recommendation would be.
std::string StudyPageSections(const StudyReport& report);

// The page's <style> element, for a page that shows the sections.
absl::string_view StudyPageStyle();

// `text` with &, <, >, " and ' replaced by their character references.
std::string HtmlEscape(absl::string_view text);

}  // namespace tessera::cli
