// `tessera report`'s page on constructed messages: what it shows, that every
// planner text is escaped, and that the plots place their points inside the
// axes and leave out what cannot be drawn.
#include "cli/report_html.h"

#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

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
           "1 nodes x 2 agents/cpu/Test CPU", "Best throughput", "Best energy",
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

TEST(ScatterSvgTest, PointsLieInsideTheAxesAndBadOnesAreLeftOut) {
  const std::vector<ScatterPoint> points = {
      {.x = 1, .y = 2, .label = "a"},
      {.x = 250, .y = 990, .label = "b"},
      {.x = std::numeric_limits<double>::infinity(), .y = 5, .label = "inf"},
      {.x = 3, .y = 0, .label = "zero"},
      {.x = -1, .y = 4, .label = "negative"}};
  const std::string svg = ScatterSvg(points, "x <1>", "y", false);
  EXPECT_EQ(Count(svg, "<circle "), 2);
  EXPECT_NE(svg.find("x &lt;1&gt;"), std::string::npos);
  EXPECT_EQ(svg.find(">inf "), std::string::npos);
  // Plot area: x from 70 to 540, y from 15 to 315 (cli/report_html.cc).
  const std::regex circle("cx=\"([0-9.]+)\" cy=\"([0-9.]+)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), circle);
       it != std::sregex_iterator(); ++it) {
    const double cx = std::stod((*it)[1]);
    const double cy = std::stod((*it)[2]);
    EXPECT_GE(cx, 70);
    EXPECT_LE(cx, 540);
    EXPECT_GE(cy, 15);
    EXPECT_LE(cy, 315);
  }
  // Round ticks (1, 2 or 5 x 10^k): the y axis reaches past 990 in 500s.
  EXPECT_NE(svg.find(">1000</text>"), std::string::npos) << svg;
}

TEST(ScatterSvgTest, DiagonalSharesTheScaleOfBothAxes) {
  const std::string svg = ScatterSvg({{.x = 100, .y = 50, .label = "p"}},
                                     "predicted", "measured", true);
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);
  // Same scale: the point sits below the y = x line, at x = 2 y in data.
  const std::regex circle("cx=\"([0-9.]+)\" cy=\"([0-9.]+)\"");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, circle));
  const double x_px = std::stod(m[1]) - 70;   // from the y axis
  const double y_px = 315 - std::stod(m[2]);  // up from the x axis
  EXPECT_NEAR(x_px / 470, 2 * y_px / 300, 1e-2);
}

}  // namespace
}  // namespace tessera::cli
