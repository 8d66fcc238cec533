#include "cli/svg_chart.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/report_html.h"
#include "cli/text_table.h"

namespace tessera::cli {
namespace {

// Plot geometry (pixels) shared by the charts.
constexpr double kWidth = 640;
constexpr double kMarginLeft = 72;
constexpr double kMarginRight = 40;
constexpr double kTop = 16;
constexpr double kBottom = 46;

std::string Attributes(const DataAttributes& data) {
  std::string out;
  for (const auto& [name, value] : data) {
    absl::StrAppend(&out, " data-", name, "=\"", HtmlEscape(value), "\"");
  }
  return out;
}

// 1, 2 or 5 times a power of ten, at least `raw`.
double RoundStep(double raw) {
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw * (1 - 1e-12)) return m * power;
  }
  return 10 * power;
}

// Ticks of `axis`: its step's multiples within [low, high].
std::vector<double> Ticks(const AxisRange& axis) {
  std::vector<double> ticks;
  const double first = std::ceil(axis.low / axis.step - 1e-9) * axis.step;
  for (double t = first; t <= axis.high + axis.step * 1e-9; t += axis.step) {
    ticks.push_back(std::abs(t) < axis.step * 1e-9 ? 0 : t);
    if (ticks.size() > 50) break;
  }
  return ticks;
}

// Pixel scale of a value along an axis drawn from `from_px` to `to_px`.
struct Scale {
  AxisRange axis;
  double from_px = 0;
  double to_px = 1;
  double operator()(double v) const {
    return from_px +
           (v - axis.low) / (axis.high - axis.low) * (to_px - from_px);
  }
};

// Where each legend entry goes: left to right from the plot's left edge,
// wrapping to a new row of 15 px before an entry that would not fit.
std::vector<std::pair<double, double>> LegendPlaces(
    const std::vector<std::pair<std::string, std::string>>& items, double y) {
  std::vector<std::pair<double, double>> places;
  double x = kMarginLeft;
  for (const auto& item : items) {
    const double width = 24 + 6.5 * static_cast<double>(item.first.size());
    if (x > kMarginLeft && x + width > kWidth - kMarginRight) {
      x = kMarginLeft;
      y += 15;
    }
    places.emplace_back(x, y);
    x += width;
  }
  return places;
}

std::string Legend(
    const std::vector<std::pair<std::string, std::string>>& names_and_colors,
    double y) {
  std::string svg;
  const auto places = LegendPlaces(names_and_colors, y);
  for (size_t i = 0; i < places.size(); ++i) {
    const auto& [name, color] = names_and_colors[i];
    const auto [x, row_y] = places[i];
    absl::StrAppendFormat(&svg,
                          "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" "
                          "height=\"10\" fill=\"%s\"/><text x=\"%.1f\" "
                          "y=\"%.1f\">%s</text>\n",
                          x, row_y - 9, color, x + 14, row_y, HtmlEscape(name));
  }
  return svg;
}

// Rows the legend needs (as Legend wraps them).
int LegendRows(const std::vector<std::pair<std::string, std::string>>& items) {
  const auto places = LegendPlaces(items, 0);
  return places.empty() ? 0 : 1 + static_cast<int>(places.back().second / 15);
}

// Log10 values of the 1, 2 and 5 times powers of ten within `axis` (in
// log10 units).
std::vector<double> LogTicks(const AxisRange& axis) {
  std::vector<double> ticks;
  for (double decade = std::floor(axis.low); decade <= axis.high; ++decade) {
    for (double m : {1.0, 2.0, 5.0}) {
      const double t = decade + std::log10(m);
      if (t >= axis.low - 1e-9 && t <= axis.high + 1e-9) ticks.push_back(t);
    }
  }
  return ticks;
}

// The x axis along `y_px` with its ticks and label; on a log10 scale (sx's
// range in log10 units) ticked at 1, 2 and 5 times the powers of ten and
// labelled with their values.
std::string XAxis(const Scale& sx, double y_px, absl::string_view label,
                  bool log = false) {
  std::string svg = absl::StrFormat(
      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
      "stroke=\"#555\"/>\n",
      sx.from_px, y_px, sx.to_px, y_px);
  for (double t : log ? LogTicks(sx.axis) : Ticks(sx.axis)) {
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                          "y2=\"%.1f\" stroke=\"#555\"/><text x=\"%.1f\" "
                          "y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                          sx(t), y_px, sx(t), y_px + 4, sx(t), y_px + 16,
                          TickText(log ? std::pow(10.0, t) : t));
  }
  absl::StrAppendFormat(&svg,
                        "<text x=\"%.1f\" y=\"%.1f\" "
                        "text-anchor=\"middle\">%s</text>\n",
                        (sx.from_px + sx.to_px) / 2, y_px + 34,
                        HtmlEscape(label));
  return svg;
}

// A log10 axis over [min_log, max_log] (log10 units) from the 1, 2 or 5
// times a power of ten at or below the least value to the one at or above
// the greatest.
AxisRange LogAxis(double min_log, double max_log) {
  const auto tick_at_or_below = [](double v) {
    const double decade = std::floor(v);
    double best = decade;
    for (double m : {2.0, 5.0}) {
      if (decade + std::log10(m) <= v + 1e-9) best = decade + std::log10(m);
    }
    return best;
  };
  const auto tick_at_or_above = [](double v) {
    const double decade = std::floor(v);
    for (double m : {1.0, 2.0, 5.0, 10.0}) {
      if (decade + std::log10(m) >= v - 1e-9) return decade + std::log10(m);
    }
    return decade + 1;
  };
  AxisRange axis;
  axis.low = tick_at_or_below(min_log);
  axis.high = tick_at_or_above(max_log);
  if (axis.high <= axis.low) axis.high = axis.low + std::log10(2.0);
  axis.step = 1;  // ticks: LogTicks', not the step's
  return axis;
}

std::string YAxis(const Scale& sy, double x_px, absl::string_view label) {
  std::string svg = absl::StrFormat(
      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
      "stroke=\"#555\"/>\n",
      x_px, sy.from_px, x_px, sy.to_px);
  for (double t : Ticks(sy.axis)) {
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                          "y2=\"%.1f\" stroke=\"#555\"/><text x=\"%.1f\" "
                          "y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                          x_px - 4, sy(t), x_px, sy(t), x_px - 6, sy(t) + 4,
                          TickText(t));
  }
  const double mid = (sy.from_px + sy.to_px) / 2;
  absl::StrAppendFormat(&svg,
                        "<text x=\"14\" y=\"%.1f\" text-anchor=\"middle\" "
                        "transform=\"rotate(-90 14 %.1f)\">%s</text>\n",
                        mid, mid, HtmlEscape(label));
  return svg;
}

std::string SvgOpen(absl::string_view css_class, double height) {
  return absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"%s\" "
      "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
      "role=\"img\">\n",
      HtmlEscape(css_class), kWidth, height, kWidth, height);
}

// The pixels a point's label covers (text of 6.5 px per character).
struct LabelBox {
  double x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  bool Meets(const LabelBox& o) const {
    return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1;
  }
};

bool Finite(const ChartPoint& p) {
  return std::isfinite(p.x) && std::isfinite(p.y);
}

}  // namespace

std::string ExactNumber(double v) {
  if (!std::isfinite(v)) return "";
  char buffer[64];
  const std::to_chars_result r =
      std::to_chars(buffer, buffer + sizeof(buffer), v);
  return std::string(buffer, r.ptr);
}

std::string TickText(double v) {
  if (!std::isfinite(v)) return "—";
  const double a = std::abs(v);
  if (a >= 1e15 || a < 1e4) return absl::StrFormat("%.4g", v);
  if (a >= 1e12) return absl::StrFormat("%.4gT", v / 1e12);
  if (a >= 1e9) return absl::StrFormat("%.4gG", v / 1e9);
  if (a >= 1e6) return absl::StrFormat("%.4gM", v / 1e6);
  return absl::StrFormat("%.4gk", v / 1e3);
}

AxisRange NiceAxis(double min_value, double max_value, bool from_zero) {
  if (!std::isfinite(min_value) || !std::isfinite(max_value)) return {};
  if (min_value > max_value) std::swap(min_value, max_value);
  if (from_zero || (min_value >= 0 && min_value < 0.25 * max_value)) {
    min_value = std::min(min_value, 0.0);
  }
  double span = max_value - min_value;
  if (span <= 0) {
    span = std::abs(max_value) > 0 ? std::abs(max_value) * 0.2 : 1;
    min_value -= span / 2;
    max_value += span / 2;
    if (from_zero) min_value = std::min(0.0, min_value + span / 2);
  }
  const double pad = 0.05 * (max_value - min_value);
  const double low = min_value == 0 ? 0 : min_value - pad;
  const double high = max_value + pad;
  AxisRange axis;
  axis.step = RoundStep((high - low) / 5);
  axis.low = std::floor(low / axis.step + 1e-9) * axis.step;
  axis.high = std::ceil(high / axis.step - 1e-9) * axis.step;
  return axis;
}

std::string LineChartSvg(const std::vector<ChartSeries>& given,
                         const ChartOptions& given_options) {
  // A log x axis draws log10(x) on a linear one; x <= 0 has no place.
  std::vector<ChartSeries> series = given;
  ChartOptions options = given_options;
  if (options.x_log) {
    const auto log_x = [](double x) {
      return x > 0 ? std::log10(x) : std::numeric_limits<double>::quiet_NaN();
    };
    for (ChartSeries& s : series) {
      for (ChartPoint& p : s.points) p.x = log_x(p.x);
    }
    for (double& r : options.x_rules) r = log_x(r);
    std::erase_if(options.x_rules, [](double r) { return !std::isfinite(r); });
  }
  double x_min = std::numeric_limits<double>::infinity();
  double x_max = -x_min, y_min = x_min, y_max = -x_min;
  for (const ChartSeries& s : series) {
    for (const ChartPoint& p : s.points) {
      if (!Finite(p)) continue;
      x_min = std::min(x_min, p.x);
      x_max = std::max(x_max, p.x);
      y_min = std::min(y_min, p.y);
      y_max = std::max(y_max, p.y);
    }
  }
  if (!std::isfinite(x_min)) {
    return absl::StrCat("<p class=\"muted\">Nothing to plot: no point has ",
                        HtmlEscape(options.x_label), " and ",
                        HtmlEscape(options.y_label), ".</p>\n");
  }
  for (double r : options.y_rules) {
    y_min = std::min(y_min, r);
    y_max = std::max(y_max, r);
  }
  for (double r : options.x_rules) {
    x_min = std::min(x_min, r);
    x_max = std::max(x_max, r);
  }
  if (options.band_low < options.band_high) {
    y_min = std::min(y_min, options.band_low);
    y_max = std::max(y_max, options.band_high);
  }
  std::vector<std::pair<std::string, std::string>> legend;
  if (options.legend) {
    for (const ChartSeries& s : series) {
      if (!s.name.empty()) legend.emplace_back(s.name, s.color);
    }
  }
  const double plot_height = 300;
  const double height =
      kTop + plot_height + kBottom + 15.0 * LegendRows(legend) + 4;
  const Scale sx{options.x_log ? LogAxis(x_min, x_max)
                               : NiceAxis(x_min, x_max, options.x_from_zero),
                 kMarginLeft, kWidth - kMarginRight};
  const Scale sy{NiceAxis(y_min, y_max, options.y_from_zero),
                 kTop + plot_height, kTop};
  std::string svg = SvgOpen(options.css_class, height);
  if (options.band_low < options.band_high) {
    const double top = sy(std::min(options.band_high, sy.axis.high));
    const double bottom = sy(std::max(options.band_low, sy.axis.low));
    absl::StrAppendFormat(&svg,
                          "<rect class=\"band\" x=\"%.1f\" y=\"%.1f\" "
                          "width=\"%.1f\" height=\"%.1f\" fill=\"#e7eef7\">"
                          "<title>%s</title></rect>\n",
                          sx.from_px, top, sx.to_px - sx.from_px, bottom - top,
                          HtmlEscape(options.band_title));
  }
  absl::StrAppend(&svg, XAxis(sx, sy.from_px, options.x_label, options.x_log),
                  YAxis(sy, sx.from_px, options.y_label));
  for (double r : options.y_rules) {
    absl::StrAppendFormat(&svg,
                          "<line class=\"rule\" x1=\"%.1f\" y1=\"%.1f\" "
                          "x2=\"%.1f\" y2=\"%.1f\" stroke=\"#889\" "
                          "stroke-dasharray=\"4 3\"/>\n",
                          sx.from_px, sy(r), sx.to_px, sy(r));
  }
  for (double r : options.x_rules) {
    absl::StrAppendFormat(&svg,
                          "<line class=\"rule\" x1=\"%.1f\" y1=\"%.1f\" "
                          "x2=\"%.1f\" y2=\"%.1f\" stroke=\"#889\" "
                          "stroke-dasharray=\"4 3\"/>\n",
                          sx(r), sy.from_px, sx(r), sy.to_px);
  }
  std::vector<LabelBox> labels;  // drawn so far, across series
  for (const ChartSeries& s : series) {
    absl::StrAppend(&svg, "<g class=\"series\"", Attributes(s.data), ">\n");
    if (!s.name.empty()) {
      absl::StrAppend(&svg, "<title>", HtmlEscape(s.name), "</title>\n");
    }
    if (s.line) {
      // One polyline per run of finite points: a gap where one is not.
      std::string run;
      int run_points = 0;
      const auto flush = [&] {
        if (run_points >= 2) {
          absl::StrAppendFormat(&svg,
                                "<polyline fill=\"none\" stroke=\"%s\" "
                                "stroke-width=\"1.6\" points=\"%s\"/>\n",
                                s.color, run);
        }
        run.clear();
        run_points = 0;
      };
      for (const ChartPoint& p : s.points) {
        if (!Finite(p)) {
          flush();
          continue;
        }
        absl::StrAppendFormat(&run, "%s%.1f,%.1f", run.empty() ? "" : " ",
                              sx(p.x), sy(p.y));
        ++run_points;
      }
      flush();
    }
    for (const ChartPoint& p : s.points) {
      if (!Finite(p) || !p.marker) continue;
      absl::StrAppendFormat(
          &svg,
          "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\" stroke=\"%s\" "
          "stroke-width=\"1.5\"%s><title>%s</title></circle>\n",
          sx(p.x), sy(p.y), s.line ? "2.5" : "5", p.filled ? s.color : "white",
          s.color, Attributes(p.data), HtmlEscape(p.title));
      if (!p.label.empty()) {
        // Inside the plot area, so that it never meets the axes' titles:
        // above the point in the lower half, below it in the upper, toward
        // the middle horizontally.
        // A label that would cover one already drawn moves a line further
        // from its point (up to three lines), then stays.
        const bool right_half = sx(p.x) > (sx.from_px + sx.to_px) / 2;
        const bool lower_half = sy(p.y) > (sy.from_px + sy.to_px) / 2;
        const double x = sx(p.x) + (right_half ? -8 : 8);
        const double width = 6.5 * static_cast<double>(p.label.size());
        const LabelBox box_x{right_half ? x - width : x,
                             right_half ? x : x + width, 0, 0};
        double y = 0;
        for (int line = 0; line < 4; ++line) {
          const double away = 14.0 * line;
          y = std::clamp(sy(p.y) + (lower_half ? -8 - away : 16 + away),
                         sy.to_px + 10, sy.from_px - 4);
          LabelBox box = box_x;
          box.y0 = y - 11, box.y1 = y + 2;
          if (std::none_of(labels.begin(), labels.end(),
                           [&](const LabelBox& b) { return b.Meets(box); })) {
            break;
          }
        }
        labels.push_back(LabelBox{box_x.x0, box_x.x1, y - 11, y + 2});
        absl::StrAppendFormat(
            &svg,
            "<text class=\"point-label\" x=\"%.1f\" y=\"%.1f\"%s>%s</text>\n",
            x, y, right_half ? " text-anchor=\"end\"" : "",
            HtmlEscape(p.label));
      }
    }
    absl::StrAppend(&svg, "</g>\n");
  }
  absl::StrAppend(&svg, Legend(legend, kTop + plot_height + kBottom + 12),
                  "</svg>\n");
  return svg;
}

std::string StackedBarsSvg(const std::vector<StackedBar>& bars,
                           absl::string_view axis_label,
                           absl::string_view css_class) {
  double longest = 0;
  std::vector<std::pair<std::string, std::string>> legend;
  for (const StackedBar& b : bars) {
    double total = 0;
    for (const BarPart& p : b.parts) {
      if (!std::isfinite(p.seconds) || p.seconds <= 0) continue;
      total += p.seconds;
      if (std::none_of(legend.begin(), legend.end(),
                       [&](const auto& l) { return l.first == p.name; })) {
        legend.emplace_back(p.name, p.color);
      }
    }
    longest = std::max(longest, total);
  }
  if (bars.empty() || longest <= 0) {
    return "<p class=\"muted\">Nothing to plot: no step time to break "
           "down.</p>\n";
  }
  constexpr double kLabelWidth = 150, kNoteWidth = 130, kRow = 20;
  const double plot_bottom = kTop + kRow * static_cast<double>(bars.size());
  const double height = plot_bottom + kBottom + 15.0 * LegendRows(legend) + 4;
  const Scale sx{NiceAxis(0, longest, true), kLabelWidth, kWidth - kNoteWidth};
  std::string svg = SvgOpen(css_class, height);
  absl::StrAppend(&svg, XAxis(sx, plot_bottom, axis_label));
  double y = kTop;
  for (const StackedBar& b : bars) {
    absl::StrAppend(&svg, "<g class=\"bar\"", Attributes(b.data), ">\n");
    absl::StrAppendFormat(&svg,
                          "<text x=\"%.1f\" y=\"%.1f\" "
                          "text-anchor=\"end\">%s</text>\n",
                          kLabelWidth - 6, y + 13, HtmlEscape(b.label));
    double at = 0;
    for (const BarPart& p : b.parts) {
      if (!std::isfinite(p.seconds) || p.seconds <= 0) continue;
      absl::StrAppendFormat(
          &svg,
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
          "fill=\"%s\" data-part=\"%s\" data-seconds=\"%s\"><title>%s: %s "
          "s</title></rect>\n",
          sx(at), y + 2, sx(at + p.seconds) - sx(at), kRow - 4, p.color,
          HtmlEscape(p.name), ExactNumber(p.seconds),
          HtmlEscape(absl::StrCat(b.label, " ", p.name)), Readable(p.seconds));
      at += p.seconds;
    }
    if (!b.note.empty()) {
      absl::StrAppendFormat(&svg, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                            sx(at) + 6, y + 13, HtmlEscape(b.note));
    }
    absl::StrAppend(&svg, "</g>\n");
    y += kRow;
  }
  absl::StrAppend(&svg, Legend(legend, plot_bottom + kBottom + 12), "</svg>\n");
  return svg;
}

std::string TimelineSvg(const std::vector<TimelineLane>& lanes,
                        absl::string_view axis_label,
                        absl::string_view css_class) {
  double latest = 0;
  for (const TimelineLane& lane : lanes) {
    for (const TimelineSpan& s : lane.spans) {
      if (std::isfinite(s.end_s)) latest = std::max(latest, s.end_s);
    }
  }
  if (lanes.empty() || latest <= 0) {
    return "<p class=\"muted\">Nothing to plot: no trial has started.</p>\n";
  }
  constexpr double kLabelWidth = 150, kRow = 24;
  const double plot_bottom = kTop + kRow * static_cast<double>(lanes.size());
  const Scale sx{NiceAxis(0, latest, true), kLabelWidth, kWidth - kMarginRight};
  std::string svg = SvgOpen(css_class, plot_bottom + kBottom);
  absl::StrAppend(&svg, XAxis(sx, plot_bottom, axis_label));
  double y = kTop;
  for (const TimelineLane& lane : lanes) {
    absl::StrAppendFormat(
        &svg,
        "<g class=\"lane\" data-agent=\"%s\">\n<text "
        "x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
        HtmlEscape(lane.name), kLabelWidth - 6, y + 15, HtmlEscape(lane.name));
    for (const TimelineSpan& s : lane.spans) {
      if (!std::isfinite(s.start_s) || !std::isfinite(s.end_s)) continue;
      const double x0 = sx(std::max(0.0, s.start_s));
      const double width = std::max(1.0, sx(s.end_s) - x0);
      absl::StrAppendFormat(
          &svg,
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
          "fill=\"%s\"%s data-start-s=\"%s\" data-end-s=\"%s\"%s>"
          "<title>%s</title></rect>\n",
          x0, y + 3, width, kRow - 6, s.color,
          s.open ? " stroke=\"#333\" stroke-dasharray=\"3 2\"" : "",
          ExactNumber(s.start_s), ExactNumber(s.end_s), Attributes(s.data),
          HtmlEscape(s.title));
      if (width > 7.0 * static_cast<double>(s.text.size()) + 4) {
        absl::StrAppendFormat(&svg,
                              "<text x=\"%.1f\" y=\"%.1f\" "
                              "style=\"fill: white\">%s</text>\n",
                              x0 + 3, y + 15, HtmlEscape(s.text));
      }
    }
    absl::StrAppend(&svg, "</g>\n");
    y += kRow;
  }
  return svg + "</svg>\n";
}

std::string SequentialColour(double fraction) {
  // Viridis at 0, 1/4, 1/2, 3/4 and 1 (matplotlib's _viridis_data), linear
  // between them.
  static constexpr double kStops[5][3] = {{68, 1, 84},
                                          {59, 82, 139},
                                          {33, 145, 140},
                                          {94, 201, 98},
                                          {253, 231, 37}};
  const double f = std::isfinite(fraction) ? std::clamp(fraction, 0.0, 1.0) : 0;
  const double at = f * 4;
  const int i = std::min(3, static_cast<int>(at));
  const double t = at - i;
  int rgb[3];
  for (int c = 0; c < 3; ++c) {
    rgb[c] = static_cast<int>(
        std::lround(kStops[i][c] + t * (kStops[i + 1][c] - kStops[i][c])));
  }
  return absl::StrFormat("#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

std::string ParallelCoordinatesSvg(const std::vector<ParallelAxis>& axes,
                                   const std::vector<ParallelLine>& lines,
                                   const ColourScale& scale,
                                   absl::string_view css_class) {
  std::vector<const ParallelLine*> drawn;
  for (const ParallelLine& l : lines) {
    bool finite = l.values.size() == axes.size();
    for (double v : l.values) finite = finite && std::isfinite(v);
    if (finite) drawn.push_back(&l);
  }
  if (axes.empty() || drawn.empty()) {
    return "<p class=\"muted\">Nothing to plot: no measured trial yet.</p>\n";
  }
  // Each axis's distinct values, lowest first.
  std::vector<std::vector<double>> ticks(axes.size());
  for (size_t a = 0; a < axes.size(); ++a) {
    for (const ParallelLine* l : drawn) ticks[a].push_back(l->values[a]);
    std::sort(ticks[a].begin(), ticks[a].end());
    ticks[a].erase(std::unique(ticks[a].begin(), ticks[a].end()),
                   ticks[a].end());
  }
  const double plot_top = kTop + 18, plot_bottom = kTop + 18 + 240;
  const double left = kMarginLeft, right = kWidth - kMarginRight;
  auto axis_x = [&](size_t a) {
    return axes.size() == 1 ? (left + right) / 2
                            : left + (right - left) * static_cast<double>(a) /
                                         static_cast<double>(axes.size() - 1);
  };
  auto value_y = [&](size_t a, double v) {
    const std::vector<double>& t = ticks[a];
    const size_t i = static_cast<size_t>(
        std::lower_bound(t.begin(), t.end(), v) - t.begin());
    if (t.size() == 1) return (plot_top + plot_bottom) / 2;
    return plot_bottom - (plot_bottom - plot_top) * static_cast<double>(i) /
                             static_cast<double>(t.size() - 1);
  };
  auto value_name = [&](size_t a, double v) {
    const std::vector<std::string>& names = axes[a].value_names;
    const long i = std::lround(v);
    if (!names.empty() && i >= 0 && static_cast<size_t>(i) < names.size()) {
      return names[static_cast<size_t>(i)];
    }
    return Readable(v);
  };
  const double legend_y = plot_bottom + 30;
  std::string svg = SvgOpen(css_class, legend_y + 40);
  // The lines first, under the axes.
  for (const ParallelLine* l : drawn) {
    std::string points;
    for (size_t a = 0; a < axes.size(); ++a) {
      absl::StrAppendFormat(&points, "%s%.1f,%.1f", a == 0 ? "" : " ",
                            axis_x(a), value_y(a, l->values[a]));
    }
    absl::StrAppendFormat(
        &svg,
        "<polyline class=\"trial\" points=\"%s\" fill=\"none\" "
        "stroke=\"%s\" stroke-width=\"2\" stroke-opacity=\"0.8\"%s>"
        "<title>%s</title></polyline>\n",
        points, l->color, Attributes(l->data), HtmlEscape(l->title));
  }
  for (size_t a = 0; a < axes.size(); ++a) {
    const double x = axis_x(a);
    absl::StrAppendFormat(
        &svg,
        "<g class=\"axis\" data-axis=\"%s\"><line x1=\"%.1f\" y1=\"%.1f\" "
        "x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\"/>\n<text x=\"%.1f\" "
        "y=\"%.1f\" text-anchor=\"middle\" font-weight=\"600\">%s</text>\n",
        HtmlEscape(axes[a].name), x, plot_top, x, plot_bottom, x, plot_top - 8,
        HtmlEscape(axes[a].name));
    for (double v : ticks[a]) {
      absl::StrAppendFormat(&svg,
                            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
                            "class=\"tick\">%s</text>\n",
                            x - 4, value_y(a, v) + 4,
                            HtmlEscape(value_name(a, v)));
    }
    absl::StrAppend(&svg, "</g>\n");
  }
  if (scale.color_of != nullptr) {
    constexpr int kSteps = 20;
    const double width = 200, x0 = left;
    for (int i = 0; i < kSteps; ++i) {
      absl::StrAppendFormat(
          &svg,
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"10\" "
          "fill=\"%s\"/>\n",
          x0 + width * i / kSteps, legend_y, width / kSteps + 0.5,
          scale.color_of((i + 0.5) / kSteps));
    }
    absl::StrAppendFormat(
        &svg,
        "<text x=\"%.1f\" y=\"%.1f\">%s</text><text x=\"%.1f\" "
        "y=\"%.1f\" text-anchor=\"end\">%s</text><text x=\"%.1f\" "
        "y=\"%.1f\">%s</text>\n",
        x0, legend_y + 24, HtmlEscape(Readable(scale.low)), x0 + width,
        legend_y + 24, HtmlEscape(Readable(scale.high)), x0 + width + 10,
        legend_y + 9, HtmlEscape(scale.label));
  }
  return svg + "</svg>\n";
}

}  // namespace tessera::cli
