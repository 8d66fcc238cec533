// Plots as inline SVG for `tessera report`: line and point charts, stacked
// horizontal bars and a timeline, with round ticks and axes that start near
// the data. No script, no font, nothing fetched: the SVG is text in the page.
//
// Every drawn mark carries its numbers twice: in a <title> (shown on hover)
// and in data-* attributes written to round-trip (shortest form that reads
// back to the same double), so that a reader or a test can take them off the
// page. Numbers that are not finite are never drawn as 0: a line breaks
// there and the point is left out.
//
//   ChartSeries s{.name = "trial 7", .color = "#1f5fa8"};
//   s.points.push_back({.x = 0, .y = 10.2, .title = "step 0: loss 10.2"});
//   std::string svg = LineChartSvg({s}, {.x_label = "step",
//                                        .y_label = "loss"});
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace tessera::cli {

// name="value" pairs written as data-name="value" (value escaped).
using DataAttributes = std::vector<std::pair<std::string, std::string>>;

// `v` in the shortest form that reads back to the same double; "" when
// not finite.
std::string ExactNumber(double v);

// A tick label: four significant digits, with k, M, G or T from 10^4 up
// ("86.4M", not "86406829").
std::string TickText(double v);

// An axis: [low, high] in steps of `step`, ticks at its multiples.
struct AxisRange {
  double low = 0;
  double high = 1;
  double step = 0.2;
};

// Round ticks (1, 2 or 5 times a power of ten, about five of them) over the
// data's [min_value, max_value] with a little room each side. The axis
// starts at 0 only when `from_zero`, or when the data starts closer to 0
// than a quarter of its top; otherwise near the data's minimum.
AxisRange NiceAxis(double min_value, double max_value, bool from_zero);

struct ChartPoint {
  double x = 0;
  double y = 0;
  std::string title = {};    // hover text; the point's numbers are appended
  std::string label = {};    // drawn beside the point when not ""
  bool filled = true;        // hollow: a predicted point among measured ones
  bool marker = true;        // false: part of the line only
  DataAttributes data = {};  // on the point's <circle>
};

struct ChartSeries {
  std::string name = {};  // the legend's text
  std::string color = {};
  std::vector<ChartPoint> points = {};  // in drawing order
  bool line = true;                     // join consecutive finite points
  DataAttributes data = {};             // on the series' <g>
};

struct ChartOptions {
  std::string x_label = {};
  std::string y_label = {};
  bool x_from_zero = false;
  bool y_from_zero = false;
  std::vector<double> y_rules = {};  // dashed horizontal lines (e.g. y = 0)
  std::vector<double> x_rules = {};  // dashed vertical lines (e.g. warm-up end)
  // A shaded horizontal band [band_low, band_high] when band_low < band_high
  // (e.g. the model's expected error), with its hover text.
  double band_low = 0;
  double band_high = 0;
  std::string band_title = {};
  std::string css_class = {};  // on the <svg>, for the page and for tests
  bool legend = true;
  // x on a log10 scale, ticked at 1, 2 and 5 times powers of ten (points
  // with x <= 0 are not drawn): for figures that span decades.
  bool x_log = false;
};

// Points with finite coordinates on axes fitted to them (and to the rules
// and band). With no such point, a sentence saying so instead of a plot.
std::string LineChartSvg(const std::vector<ChartSeries>& series,
                         const ChartOptions& options);

// One part of a stacked bar.
struct BarPart {
  std::string name = {};  // "compute", "exposed communication", ...
  double seconds = 0;
  std::string color = {};
};

// One horizontal bar: its parts left to right.
struct StackedBar {
  std::string label = {};  // drawn left of the bar
  std::vector<BarPart> parts = {};
  std::string note =
      {};  // drawn right of the bar (e.g. "breakdown not measured")
  DataAttributes data = {};  // on the bar's <g>
};

// Horizontal stacked bars on one time axis from 0 (`unit` names it), with a
// legend of the part names in first-seen order. Parts with a non-finite or
// non-positive length are left out; a bar with none left shows its label
// and note only.
std::string StackedBarsSvg(const std::vector<StackedBar>& bars,
                           absl::string_view axis_label,
                           absl::string_view css_class);

// One interval of a timeline lane.
struct TimelineSpan {
  double start_s = 0;  // from the timeline's origin
  double end_s = 0;
  std::string text = {};   // drawn inside when it fits
  std::string title = {};  // hover text
  std::string color = {};
  bool open = false;  // still running: dashed outline
  DataAttributes data = {};
};

struct TimelineLane {
  std::string name = {};  // e.g. an agent id
  std::vector<TimelineSpan> spans = {};
};

// Lanes top to bottom on one time axis from 0 to the latest end (seconds).
std::string TimelineSvg(const std::vector<TimelineLane>& lanes,
                        absl::string_view axis_label,
                        absl::string_view css_class);

// One vertical axis of a parallel-coordinates plot: the distinct values
// its lines take, evenly spaced, lowest at the bottom (an ordinal axis: tp
// 1, 2, 8 are three equal steps). `value_names` names values 0, 1, ... (a
// category such as recompute); empty: the numbers are their own names.
struct ParallelAxis {
  std::string name = {};
  std::vector<std::string> value_names = {};
};

// One line across the axes: a value per axis, in the axes' order.
struct ParallelLine {
  std::vector<double> values = {};
  std::string color = {};
  std::string title = {};    // hover text
  DataAttributes data = {};  // on the line's <polyline>
};

// The colour scale's legend under the plot: a bar from `low` to `high` in
// the colours `color_of` gives, labelled with `label` ("tokens/s").
struct ColourScale {
  std::string label = {};
  double low = 0;
  double high = 0;
  std::string (*color_of)(double fraction) = nullptr;  // 0 low .. 1 high
};

// Lines across one axis per knob; values not finite leave the line out.
// With no line, a sentence saying so instead of a plot.
std::string ParallelCoordinatesSvg(const std::vector<ParallelAxis>& axes,
                                   const std::vector<ParallelLine>& lines,
                                   const ColourScale& scale,
                                   absl::string_view css_class);

// A sequential colour from dark blue (0) through teal to yellow (1), like
// viridis: higher is brighter.
std::string SequentialColour(double fraction);

}  // namespace tessera::cli
