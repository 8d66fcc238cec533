// `tessera report`'s page on constructed messages: what it shows, that every
// planner text is escaped, that each plot carries the numbers it was given
// (data-* attributes) and shows what was not measured as "—", and the SVG
// charts' axes, gaps and bounds.
#include "cli/report_html.h"

#include <cmath>
#include <limits>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "cli/report_plots.h"
#include "cli/report_predictions.h"
#include "cli/svg_chart.h"
#include "gtest/gtest.h"
#include "costmodel/calibration/calibration.h"
#include "service/study_queries.h"
#include "costmodel/stacks/stack_calibration.h"

namespace tessera::cli {
namespace {

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + what.size())) {
    ++n;
  }
  return n;
}

v1::Layout Dp(int64_t dp, int64_t zero) {
  v1::Layout l;
  l.set_dp(dp);
  l.set_zero(zero);
  l.set_micro_batch(1);
  return l;
}

StudyReport TwoTrialReport() {
  StudyReport r;
  v1::StudySummary* s = r.study.mutable_study();
  s->set_id(7);
  s->set_name("<script>alert('x')</script>");
  s->set_state(v1::STUDY_DONE);
  s->set_model("tiny");
  s->set_gpu("h100-sxm");
  s->set_nodes(1);
  s->set_gpus_per_node(2);
  s->set_trials_done(2);
  s->set_trials_total(2);
  r.study.mutable_spec()->mutable_training()->set_global_batch(8);
  r.study.mutable_spec()->mutable_training()->set_seq_len(128);
  r.study.mutable_spec()->mutable_training()->set_total_tokens(1e9);

  v1::Trial ok;
  ok.set_id(11);
  ok.set_state(v1::TRIAL_OK);
  *ok.mutable_layout() = Dp(2, 3);
  ok.mutable_predicted()->set_tokens_per_s(9000);
  ok.mutable_measured()->set_tokens_per_s(10000);
  ok.mutable_measured()->set_steps(4);
  ok.mutable_measured()->set_mfu(0.5);
  ok.mutable_measured()->set_watts_per_gpu(400);
  ok.add_agents("agent-a");
  v1::Trial oom;
  oom.set_id(12);
  oom.set_state(v1::TRIAL_OOM);
  *oom.mutable_layout() = Dp(2, 0);
  oom.set_reason("rank 0 allocation of 2 GiB > limit & more");
  r.trials = {ok, oom};

  v1::Recommendation& rec = r.recommendation;
  rec.set_final(true);
  v1::RecommendedLayout best;
  *best.mutable_layout() = Dp(2, 3);
  best.set_provenance(v1::MEASURED);
  best.set_trial_id(11);
  best.set_tokens_per_s(10000);
  best.set_tokens_per_joule(12.5);
  best.set_energy_provenance(v1::MEASURED);
  best.mutable_full_run()->set_days(1.5);
  best.set_why("exposed communication 24% of the step <measured>");
  v1::RecommendedLayout predicted;
  *predicted.mutable_layout() = Dp(2, 1);
  predicted.set_provenance(v1::PREDICTED);
  predicted.set_tokens_per_s(8000);
  predicted.set_tokens_per_joule(14);
  predicted.set_energy_provenance(v1::PREDICTED);
  *rec.mutable_best_throughput() = best;
  *rec.mutable_best_energy() = predicted;
  *rec.add_pareto() = best;
  *rec.add_pareto() = predicted;
  (*rec.mutable_calibration())["gemm_peak_efficiency"] = 0.71;
  rec.set_gpu_name("agents/cpu/Test CPU");
  rec.set_calibration_samples(1);
  return r;
}

TEST(HtmlEscapeTest, ReplacesEveryMarkupCharacter) {
  EXPECT_EQ(HtmlEscape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  EXPECT_EQ(HtmlEscape("plain text"), "plain text");
}

TEST(StudyReportHtmlTest, ShowsTheRecommendationTrialsAndCalibration) {
  const std::string html = RenderStudyReportHtml(TwoTrialReport());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>\n"), std::string::npos);
  for (const std::string& expected : std::vector<std::string>{
           "1 node x 2 agents/cpu/Test CPU", "Best throughput", "Best energy",
           "MEASURED</span> (trial 11)", "PREDICTED", "1.5 days",
           "gemm_peak_efficiency", "0.71", "agent-a", "400 W", "50.0%", "oom",
           "Measured against predicted", "&quot;total_tokens&quot;"}) {
    EXPECT_NE(html.find(expected), std::string::npos) << expected;
  }
  // One row per trial, and the trial's reason escaped.
  EXPECT_NE(html.find("<td class=\"n\">11</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"n\">12</td>"), std::string::npos);
  EXPECT_NE(html.find("limit &amp; more"), std::string::npos);
}

TEST(StudyReportHtmlTest, EscapesEveryTextFromThePlanner) {
  const std::string html = RenderStudyReportHtml(TwoTrialReport());
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)"), std::string::npos);
  EXPECT_NE(html.find("&lt;measured&gt;"), std::string::npos);
}

TEST(StudyReportHtmlTest, PlotsMeasuredFilledAndPredictedHollow) {
  const std::string html = RenderStudyReportHtml(TwoTrialReport());
  // Pareto: two points, one hollow; measured vs predicted: the ok trial.
  EXPECT_EQ(Count(html, "<circle "), 3);
  EXPECT_EQ(Count(html, "fill=\"white\""), 1);
}

TEST(StudyReportHtmlTest, WithoutARecommendationSaysSo) {
  StudyReport r = TwoTrialReport();
  r.recommendation = v1::Recommendation();
  r.trials.clear();
  const std::string html = RenderStudyReportHtml(r);
  EXPECT_NE(html.find("No recommendation yet."), std::string::npos);
  EXPECT_NE(html.find("Nothing to plot"), std::string::npos);
  EXPECT_NE(html.find("Trials (0)"), std::string::npos);
  EXPECT_EQ(Count(html, "<circle "), 0);
}

// The plot of `css` ("pareto", "loss", ...) in `html`, "" when absent.
std::string Plot(const std::string& html, const std::string& css) {
  const size_t from = html.find("class=\"plot " + css + "\"");
  if (from == std::string::npos) return "";
  return html.substr(from, html.find("</svg>", from) - from);
}

// The number in `attribute`="..." of the first element with `with`.
double AttributeOf(const std::string& svg, const std::string& with,
                   const std::string& attribute) {
  const std::regex element("<[a-z]+ [^>]*" + with + "[^>]*>");
  std::smatch m;
  if (!std::regex_search(svg, m, element)) return NAN;
  const std::regex value(" " + attribute + "=\"([^\"]*)\"");
  const std::string tag = m.str();
  std::smatch v;
  if (!std::regex_search(tag, v, value)) return NAN;
  return v[1].str().empty() ? NAN : std::stod(v[1]);
}

// TwoTrialReport with per-step series, timings, a breakdown, and a third
// trial still running on another agent.
StudyReport FullReport() {
  StudyReport r = TwoTrialReport();
  r.generated = absl::FromUnixMillis(1'700'000'100'000);
  v1::Trial& ok = r.trials[0];
  ok.set_warmup_steps(2);
  v1::TrialMetrics* m = ok.mutable_measured();
  for (double loss : {10.5, 9.25, 8.125, std::nan(""), 7.0625, 7.03125}) {
    m->add_loss(loss);
  }
  for (double s : {0.5, 0.375, 0.25, 0.2578125, 0.25, 0.25}) {
    m->add_step_times_s(s);
  }
  m->set_step_time_median_s(0.25);
  m->set_compute_s(0.15);
  m->set_exposed_comm_s(0.0625);
  ok.mutable_predicted()->set_step_time_s(0.3);
  ok.set_started_unix_ms(1'700'000'000'000);
  ok.set_finished_unix_ms(1'700'000'030'000);
  v1::Trial& oom = r.trials[1];
  oom.add_agents("agent-a");
  oom.set_started_unix_ms(1'700'000'031'000);
  oom.set_finished_unix_ms(1'700'000'032'000);
  v1::Trial running;
  running.set_id(13);
  running.set_state(v1::TRIAL_LEASED);
  *running.mutable_layout() = Dp(1, 0);
  running.add_agents("agent-b");
  running.set_started_unix_ms(1'700'000'040'000);
  r.trials.push_back(running);
  TrialBreakdown b;
  b.predicted = true;
  b.prediction.set_step_time_s(0.28);
  b.prediction.set_compute_s(0.2);
  b.prediction.set_exposed_comm_s(0.03);
  b.prediction.set_bubble_s(0.04);
  r.breakdowns[11] = b;
  r.recommendation.set_calibration_mape(0.08);
  return r;
}

TEST(StudyReportHtmlTest, DrawsEveryPlotWithNoScriptAndNoResource) {
  const std::string html = RenderStudyReportHtml(FullReport());
  for (const std::string css :
       {"pareto", "error", "loss", "step-time", "breakdown", "timeline"}) {
    EXPECT_NE(Plot(html, css), "") << css;
  }
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find(" href="), std::string::npos);
  // Nothing to fetch: the only URL is SVG's namespace name.
  EXPECT_EQ(Count(html, "http"),
            Count(html, "xmlns=\"http://www.w3.org/2000/svg\""));
}

TEST(StudyReportHtmlTest, StepCurvesCarryEachStepAndBreakWhereNoneWasKept) {
  const std::string html = RenderStudyReportHtml(FullReport());
  const std::string loss = Plot(html, "loss");
  EXPECT_EQ(AttributeOf(loss, "data-step=\"2\"", "data-loss"), 8.125);
  EXPECT_EQ(AttributeOf(loss, "data-step=\"4\"", "data-loss"), 7.0625);
  // Step 3's loss is not finite: no point, and the line breaks there.
  EXPECT_TRUE(std::isnan(AttributeOf(loss, "data-step=\"3\"", "data-loss")));
  EXPECT_EQ(Count(loss, "<polyline"), 2);
  // Warm-up steps (0 and 1) hollow.
  EXPECT_EQ(Count(loss, "fill=\"white\""), 2);
  const std::string times = Plot(html, "step-time");
  EXPECT_EQ(AttributeOf(times, "data-step=\"3\"", "data-step-time-s"),
            0.2578125);
  EXPECT_EQ(Count(times, "<polyline"), 1);
  // Step times sit far from 0: the axis starts near them.
  EXPECT_EQ(times.find("text-anchor=\"end\">0</text>"), std::string::npos)
      << times;
}

// A study that chose 2 of 4 nodes: 1, 2 and 4 nodes on the front, 3 off
// it, 2 chosen.
StudyReport ScaledReport() {
  StudyReport r = TwoTrialReport();
  v1::RecommendationScale* scale = r.recommendation.mutable_scale();
  scale->set_nodes(2);
  scale->set_gpus(16);
  scale->set_cluster_nodes(4);
  scale->set_cluster_gpus(32);
  scale->set_objective("energy");
  const struct {
    int64_t nodes;
    double days, mwh;
    bool front;
  } counts[] = {{1, 40, 10.0, true},
                {2, 20.5, 10.2, true},
                {3, 16, 12.0, false},
                {4, 10.5, 10.8, true}};
  for (const auto& c : counts) {
    v1::ScaleSearchCount* x = scale->add_counts();
    x->set_nodes(c.nodes);
    x->set_gpus(8 * c.nodes);
    *x->mutable_layout() = Dp(8 * c.nodes, 0);
    x->set_tokens_per_s_per_gpu(1000);
    x->set_watts_per_gpu(600);
    x->mutable_full_run()->set_days(c.days);
    x->mutable_full_run()->set_energy_mwh(c.mwh);
    x->set_on_front(c.front);
    x->set_chosen(c.nodes == 2);
  }
  v1::ScaleSearchCount* none = scale->add_counts();
  none->set_nodes(8);
  none->set_gpus(64);
  none->set_skipped("training.global_batch: 16 sequences on 64 GPUs");
  return r;
}

TEST(StudyReportHtmlTest, GpuCountsPlotTimeAgainstEnergyLabelled) {
  const std::string html = RenderStudyReportHtml(ScaledReport());
  const std::string scale = Plot(html, "scale");
  ASSERT_NE(scale, "") << html;
  // The front as a line through its 3 counts, the 4th hollow beside it.
  EXPECT_EQ(Count(scale, "<polyline"), 1);
  EXPECT_EQ(Count(scale, "<circle "), 4);
  EXPECT_EQ(Count(scale, "data-on-front=\"1\""), 3);
  EXPECT_NE(scale.find(">16 GPUs (chosen)</text>"), std::string::npos)
      << scale;
  for (const char* label : {">8 GPUs</text>", ">24 GPUs</text>",
                            ">32 GPUs</text>", "days to train", "MWh"}) {
    EXPECT_NE(scale.find(label), std::string::npos) << label;
  }
  // The table names every count, the one with no layout with its reason.
  EXPECT_NE(html.find("16 sequences on 64 GPUs"), std::string::npos);
  EXPECT_NE(html.find("GPU count: time to train against energy"),
            std::string::npos);
  // A study on its whole cluster has no such section.
  EXPECT_EQ(Plot(RenderStudyReportHtml(FullReport()), "scale"), "");
  EXPECT_EQ(RenderStudyReportHtml(FullReport()).find("GPU count:"),
            std::string::npos);
}

TEST(StudyReportHtmlTest, ParetoFrontIsALineThroughLabelledPoints) {
  const std::string pareto =
      Plot(RenderStudyReportHtml(FullReport()), "pareto");
  EXPECT_EQ(Count(pareto, "<polyline"), 1);
  EXPECT_EQ(Count(pareto, "<circle "), 2);
  EXPECT_EQ(Count(pareto, "class=\"point-label\""), 2);
  EXPECT_NE(pareto.find("(trial 11)</text>"), std::string::npos) << pareto;
  EXPECT_EQ(AttributeOf(pareto, "data-tokens-per-s=\"10000\"",
                        "data-tokens-per-joule"),
            12.5);
  // 8000..10000 tokens/s and 12.5..14 tokens/J: neither axis starts at 0.
  EXPECT_EQ(pareto.find(">0</text>"), std::string::npos) << pareto;
}

TEST(StudyReportHtmlTest, MeasuredAgainstPredictedShowsTheErrorInPercent) {
  const std::string error = Plot(RenderStudyReportHtml(FullReport()), "error");
  // 10000 measured against 9000 predicted: +11.1%.
  EXPECT_NEAR(AttributeOf(error, "data-trial=\"11\"", "data-error-pct"),
              100.0 / 9, 1e-9);
  EXPECT_EQ(
      AttributeOf(error, "data-trial=\"11\"", "data-predicted-tokens-per-s"),
      9000);
  EXPECT_NE(error.find("class=\"rule\""), std::string::npos);  // y = 0
  EXPECT_NE(error.find("class=\"band\""), std::string::npos);  // MAPE ±8%
  EXPECT_NE(error.find("±8.0%"), std::string::npos);
}

TEST(StudyReportHtmlTest, BreakdownSetsMeasuredBesidePredicted) {
  StudyReport r = FullReport();
  std::string html = RenderStudyReportHtml(r);
  std::string bars = Plot(html, "breakdown");
  const std::string measured = "data-kind=\"measured\"";
  EXPECT_NE(bars.find("data-trial=\"11\" " + measured), std::string::npos);
  EXPECT_EQ(AttributeOf(bars, "data-part=\"compute\"", "data-seconds"), 0.15);
  EXPECT_EQ(AttributeOf(bars, "data-part=\"pipeline bubble\"", "data-seconds"),
            0.04);
  // The measured rest: 0.25 - 0.15 - 0.0625.
  EXPECT_NEAR(
      AttributeOf(bars, "data-part=\"rest of the step\"", "data-seconds"),
      0.0375, 1e-12);
  // Only the ok trial has bars.
  EXPECT_EQ(Count(bars, "<g class=\"bar\""), 2);
  // A predicted 0 is the model's answer (no pipeline: no bubble), not a
  // missing value; the bubble nobody measured is a dash.
  r.breakdowns[11].prediction.set_bubble_s(0);
  html = RenderStudyReportHtml(r);
  const size_t table = html.find("<td>predicted</td>");
  ASSERT_NE(table, std::string::npos);
  EXPECT_NE(html.substr(table, html.find("</tr>", table) - table).find(">0 s<"),
            std::string::npos);
  const size_t measured_row = html.find("<td>measured</td>");
  ASSERT_NE(measured_row, std::string::npos);
  EXPECT_NE(
      html.substr(measured_row, html.find("</tr>", measured_row) - measured_row)
          .find(">—<"),
      std::string::npos);

  // Without a breakdown the stored predicted step shows whole, saying why;
  // a trial that timed no parts shows its step whole and its parts as "—".
  r.breakdowns[11].predicted = false;
  r.breakdowns[11].why = "infeasible: memory";
  r.trials[0].mutable_measured()->set_compute_s(0);
  r.trials[0].mutable_measured()->set_exposed_comm_s(0);
  html = RenderStudyReportHtml(r);
  bars = Plot(html, "breakdown");
  EXPECT_NE(bars.find("parts not predicted"), std::string::npos);
  EXPECT_NE(bars.find("parts not measured"), std::string::npos);
  EXPECT_EQ(AttributeOf(bars, "data-kind=\"predicted\"", "data-step-time-s"),
            0.3);
  EXPECT_EQ(bars.find("data-part=\"compute\""), std::string::npos);
  EXPECT_NE(html.find("infeasible: memory"), std::string::npos);
  const size_t section = html.find("<h2>Step-time breakdown");
  EXPECT_EQ(html.substr(section, html.find("<h2>", section + 4) - section)
                .find(">0 s<"),
            std::string::npos);
}

TEST(StudyReportHtmlTest, TimelinePutsEachTrialOnItsAgentsLane) {
  const std::string timeline =
      Plot(RenderStudyReportHtml(FullReport()), "timeline");
  EXPECT_EQ(Count(timeline, "<g class=\"lane\""), 2);  // agent-a, agent-b
  EXPECT_EQ(AttributeOf(timeline, "data-trial=\"11\"", "data-start-s"), 0);
  EXPECT_EQ(AttributeOf(timeline, "data-trial=\"11\"", "data-end-s"), 30);
  EXPECT_EQ(AttributeOf(timeline, "data-trial=\"12\"", "data-start-s"), 31);
  // Trial 13 runs still: to the report's time, dashed, with no end stored.
  EXPECT_EQ(AttributeOf(timeline, "data-trial=\"13\"", "data-end-s"), 100);
  EXPECT_TRUE(std::isnan(
      AttributeOf(timeline, "data-trial=\"13\"", "data-finished-unix-ms")));
  EXPECT_NE(timeline.find("stroke-dasharray"), std::string::npos);
}

TEST(SvgChartTest, NiceAxisStartsNearTheDataUnlessZeroIsClose) {
  AxisRange far = NiceAxis(5000, 5200, false);
  EXPECT_GT(far.low, 4500);
  EXPECT_LE(far.low, 5000);
  EXPECT_GE(far.high, 5200);
  AxisRange near = NiceAxis(10, 100, false);
  EXPECT_EQ(near.low, 0);
  EXPECT_EQ(NiceAxis(5000, 5200, true).low, 0);
  AxisRange flat = NiceAxis(7, 7, false);
  EXPECT_LT(flat.low, 7);
  EXPECT_GT(flat.high, 7);
  AxisRange negative = NiceAxis(-30, 12, false);
  EXPECT_LE(negative.low, -30);
  EXPECT_GE(negative.high, 12);
}

TEST(SvgChartTest, ALogAxisSpacesDecadesEvenlyAndLeavesOutXAtOrBelowZero) {
  ChartSeries s;
  s.color = "#000";
  for (double x : {0.5, 5.0, 50.0, 0.0, -1.0}) {
    ChartPoint p;
    p.x = x;
    p.y = 1;
    p.data = {{"x", ExactNumber(x)}};
    s.points.push_back(p);
  }
  ChartOptions options;
  options.x_log = true;
  const std::string svg = LineChartSvg({s}, options);
  EXPECT_EQ(Count(svg, "<circle "), 3);  // 0 and -1 have no log
  // Ticks at 1, 2 and 5 x 10^k, labelled with their values.
  for (const char* tick : {">0.5</text>", ">1</text>", ">2</text>",
                           ">5</text>", ">10</text>", ">20</text>",
                           ">50</text>"}) {
    EXPECT_NE(svg.find(tick), std::string::npos) << tick << "\n" << svg;
  }
  // The axis ends at the ticks around the data, not a decade beyond.
  for (const char* beyond : {">0.2</text>", ">100</text>"}) {
    EXPECT_EQ(svg.find(beyond), std::string::npos) << beyond;
  }
  // Each decade takes the same width: 0.5 -> 5 as 5 -> 50.
  const std::regex circle("cx=\"([0-9.]+)\"");
  std::vector<double> cx;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), circle);
       it != std::sregex_iterator(); ++it) {
    cx.push_back(std::stod((*it)[1]));
  }
  ASSERT_EQ(cx.size(), 3u);
  EXPECT_NEAR(cx[1] - cx[0], cx[2] - cx[1], 0.2);
  EXPECT_GT(cx[1] - cx[0], 50);
}

TEST(SvgChartTest, ALabelThatWouldCoverAnotherMovesAway) {
  ChartSeries s;
  s.color = "#000";
  for (double x : {1.0, 1.01, 9.0}) {
    ChartPoint p;
    p.x = x;
    p.y = 1;
    p.label = "a long label";
    s.points.push_back(p);
  }
  s.points.back().y = 0;  // a point far off: the axis spans something
  const std::string svg = LineChartSvg({s}, {});
  const std::regex label("class=\"point-label\" x=\"([0-9.]+)\" "
                         "y=\"([0-9.]+)\"");
  std::vector<double> ys;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), label);
       it != std::sregex_iterator(); ++it) {
    ys.push_back(std::stod((*it)[2]));
  }
  ASSERT_EQ(ys.size(), 3u) << svg;
  // The first two points nearly coincide: their labels a line apart.
  EXPECT_GE(std::abs(ys[1] - ys[0]), 13) << svg;
}

TEST(SvgChartTest, ExactNumbersReadBackToTheSameDouble) {
  EXPECT_EQ(ExactNumber(0.1), "0.1");
  EXPECT_EQ(ExactNumber(52000), "52000");
  EXPECT_EQ(std::stod(ExactNumber(1.0 / 3)), 1.0 / 3);
  EXPECT_EQ(ExactNumber(std::nan("")), "");
}

TEST(SvgChartTest, PointsLieInsideTheAxesAndBadOnesAreLeftOut) {
  ChartSeries s;
  s.color = "#000";
  for (double y : {1.0, 2.0, std::numeric_limits<double>::infinity(), 990.0}) {
    ChartPoint p;
    p.x = static_cast<double>(s.points.size());
    p.y = y;
    s.points.push_back(p);
  }
  ChartOptions options;
  options.x_label = "x <1>";
  const std::string svg = LineChartSvg({s}, options);
  EXPECT_EQ(Count(svg, "<circle "), 3);
  EXPECT_EQ(Count(svg, "<polyline"), 1);  // 0-1; 3 alone after the gap
  EXPECT_NE(svg.find("x &lt;1&gt;"), std::string::npos);
  // Plot area: x from 72 to 600, y from 16 to 316 (cli/svg_chart.cc).
  const std::regex circle("cx=\"([0-9.]+)\" cy=\"([0-9.]+)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), circle);
       it != std::sregex_iterator(); ++it) {
    EXPECT_GE(std::stod((*it)[1]), 72);
    EXPECT_LE(std::stod((*it)[1]), 600);
    EXPECT_GE(std::stod((*it)[2]), 16);
    EXPECT_LE(std::stod((*it)[2]), 316);
  }
  // Round ticks (1, 2 or 5 x 10^k): the y axis reaches past 990.
  EXPECT_NE(svg.find(">1000</text>"), std::string::npos) << svg;
  ChartSeries none;
  none.points.push_back({});
  none.points[0].y = std::nan("");
  EXPECT_NE(LineChartSvg({none}, options).find("Nothing to plot"),
            std::string::npos);
}
// An ok trial that ran the tiny model on 8 H100s, data parallel.
v1::Trial TinyOkTrial(int64_t id) {
  v1::Trial t;
  t.set_id(id);
  t.set_state(v1::TRIAL_OK);
  *t.mutable_layout() = Dp(8, 0);
  v1::StudySpec* ran = t.mutable_ran();
  ran->mutable_model()->set_preset("tiny");
  ran->mutable_cluster()->mutable_gpu()->set_preset("h100-sxm");
  ran->mutable_cluster()->set_nodes(1);
  ran->mutable_cluster()->set_gpus_per_node(8);
  ran->mutable_training()->set_global_batch(16);
  ran->mutable_training()->set_seq_len(128);
  return t;
}

TEST(TrialBreakdownTest, PredictsOkTrialsAtTheirScaleWithTheCalibration) {
  v1::Trial queued;
  queued.set_id(3);
  queued.set_state(v1::TRIAL_QUEUED);
  v1::Recommendation rec;
  const std::map<int64_t, TrialBreakdown> defaults =
      PredictTrialBreakdowns({TinyOkTrial(1), queued}, rec);
  ASSERT_EQ(defaults.size(), 1u);  // the queued trial ran nothing
  const TrialBreakdown& d = defaults.at(1);
  ASSERT_TRUE(d.predicted) << d.why;
  EXPECT_GT(d.prediction.compute_s(), 0);
  EXPECT_GE(d.prediction.step_time_s(), d.prediction.compute_s());
  EXPECT_EQ(d.prediction.bubble_s(), 0);  // no pipeline
  // The recommendation's calibration is the one used: slower GEMMs, more
  // compute.
  (*rec.mutable_calibration())["gemm_peak_efficiency"] = 0.2;
  const TrialBreakdown slow = PredictTrialBreakdowns({TinyOkTrial(1)}, rec)[1];
  ASSERT_TRUE(slow.predicted) << slow.why;
  EXPECT_GT(slow.prediction.compute_s(), d.prediction.compute_s());
}

TEST(TrialBreakdownTest, SaysWhyWhenTheRunCannotBePredicted) {
  v1::Trial t = TinyOkTrial(2);
  t.mutable_layout()->set_tp(3);  // does not divide the heads
  const TrialBreakdown b = PredictTrialBreakdowns({t}, {})[2];
  EXPECT_FALSE(b.predicted);
  EXPECT_NE(b.why.find("tp"), std::string::npos) << b.why;
  t.mutable_ran()->mutable_model()->set_preset("no-such-model");
  EXPECT_NE(PredictTrialBreakdowns({t}, {})[2].why.find("its run: "),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::cli

namespace tessera::cli {
namespace {

// The text from the first `start` to the `end` after it ("" when absent).
std::string Between(const std::string& text, const std::string& start,
                    const std::string& end) {
  const size_t from = text.find(start);
  if (from == std::string::npos) return "";
  const size_t to = text.find(end, from);
  return to == std::string::npos ? "" : text.substr(from, to - from);
}

// TwoTrialReport with a spec the cost model reads (so that the stack's
// defaults are known) and two coefficients: one moved from its default,
// one left at it.
StudyReport CalibratedReport(double* default_gemm) {
  StudyReport r = TwoTrialReport();
  v1::StudySpec& spec = *r.study.mutable_spec();
  spec.mutable_model()->set_preset("tiny");
  spec.mutable_cluster()->mutable_gpu()->set_preset("h100-sxm");
  spec.mutable_cluster()->set_nodes(1);
  spec.mutable_cluster()->set_gpus_per_node(2);
  absl::StatusOr<Workload> w = service::StudyWorkload(spec, r.recommendation);
  EXPECT_TRUE(w.ok()) << w.status();
  absl::StatusOr<costmodel::Calibration> d = costmodel::DefaultCalibration(*w);
  EXPECT_TRUE(d.ok()) << d.status();
  *default_gemm = d->gemm_peak_efficiency;
  auto& c = *r.recommendation.mutable_calibration();
  c["gemm_peak_efficiency"] = 0.9 * d->gemm_peak_efficiency;  // fitted
  c["attention_efficiency"] = d->attention_efficiency;        // default
  return r;
}

TEST(StudyReportHtmlTest, CalibrationMarksFittedAgainstTheStacksDefaults) {
  double default_gemm = 0;
  const std::string html =
      RenderStudyReportHtml(CalibratedReport(&default_gemm));
  const std::string fitted =
      Between(html, "data-coefficient=\"gemm_peak_efficiency\"", "</tr>");
  const std::string kept =
      Between(html, "data-coefficient=\"attention_efficiency\"", "</tr>");
  ASSERT_NE(fitted, "") << html;
  ASSERT_NE(kept, "") << html;
  EXPECT_NE(fitted.find("data-fitted=\"true\""), std::string::npos) << fitted;
  EXPECT_NE(fitted.find(absl::StrCat("data-default-value=\"",
                                     ExactNumber(default_gemm), "\"")),
            std::string::npos)
      << fitted;
  EXPECT_NE(fitted.find("<b>fitted</b>"), std::string::npos);
  EXPECT_NE(kept.find("data-fitted=\"false\""), std::string::npos) << kept;
  // What each coefficient means, from coefficients.inc.
  EXPECT_NE(fitted.find("fraction of the dense bf16 peak that large GEMMs "
                        "reach"),
            std::string::npos)
      << fitted;
  EXPECT_NE(html.find("1 of 2 coefficients differ from the defaults"),
            std::string::npos);
}

TEST(StudyReportHtmlTest, ParallelCoordinatesDrawEachMeasuredTrial) {
  const std::string html = RenderStudyReportHtml(TwoTrialReport());
  const std::string plot = Between(html, "class=\"plot parallel\"", "</svg>");
  ASSERT_NE(plot, "") << html;
  // The ok trial: a line carrying its knobs and measured tokens/s; the oom
  // trial measured nothing and is not drawn.
  EXPECT_EQ(Count(plot, "<polyline class=\"trial\""), 1) << plot;
  const std::string line = Between(plot, "data-trial=\"11\"", "</polyline>");
  for (const char* attribute :
       {"data-zero=\"3\"", "data-tp=\"1\"", "data-micro-batch=\"1\"",
        "data-recompute=\"none\"", "data-tokens-per-s=\"10000\""}) {
    EXPECT_NE(line.find(attribute), std::string::npos) << attribute << line;
  }
  for (const char* axis :
       {"tp", "pp", "cp", "zero", "micro-batch", "recompute"}) {
    EXPECT_NE(plot.find(absl::StrCat("data-axis=\"", axis, "\"")),
              std::string::npos)
        << axis;
  }
  // No trial measured: a sentence, not an empty plot.
  StudyReport none = TwoTrialReport();
  none.trials.pop_back();
  none.trials.front().set_state(v1::TRIAL_QUEUED);
  EXPECT_NE(ParallelCoordinatesSection(none.trials).find("Nothing to plot"),
            std::string::npos);
}

TEST(StudyReportHtmlTest, IdenticalCurvesAreSaidNotHidden) {
  StudyReport r = TwoTrialReport();
  r.trials[1].set_state(v1::TRIAL_OK);
  for (v1::Trial& t : r.trials) {
    t.mutable_measured()->clear_loss();
    for (double v : {10.0, 9.0, 8.5}) t.mutable_measured()->add_loss(v);
  }
  const std::string html = StepCurvesSection(r.trials, StepSeries::kLoss);
  EXPECT_NE(html.find("trial 12 had the same loss as trial 11 at every step"),
            std::string::npos)
      << html;
  // Different curves: nothing said.
  r.trials[1].mutable_measured()->set_loss(2, 8.4);
  EXPECT_EQ(StepCurvesSection(r.trials, StepSeries::kLoss).find("the same"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::cli
