// `tessera report`'s page in a real browser: a real planner (PlannerServer
// on 127.0.0.1:0 with a SQLite store) runs a study whose two trials two
// agents, speaking the real AgentService protocol, report with per-step
// losses and step times the test chooses; `tessera report` writes the page;
// headless Chromium (Debian's `chromium`) loads it offline. The test checks
// that it renders (the DOM Chromium built has every plot), that the browser
// logged no console error (a script error, a resource it tried to fetch, an
// SVG attribute it rejected), and that the plots carry the store's numbers:
// each point's data-* attributes equal what the SQLite store holds for the
// trial. The same page read from the store file alone (`--db`) has the same
// plots. Without Chromium the test is skipped, saying so.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/svg_chart.h"
#include "core/trial_result.h"
#include "db/sqlite_trial_store.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "service/recommendation.h"
#include "service/server.h"
#include "proto/convert.h"
#include "tessera/v1/service.grpc.pb.h"
#include "tests/cli/browser_test_util.h"
#include "tests/cli/cli_test_util.h"

namespace tessera::cli {
namespace {

class ReportBrowserTest : public testing::Test {
 protected:
  void SetUp() override {
    if (access(kChromium, X_OK) != 0) {
      GTEST_SKIP() << kChromium
                   << " is not installed (Debian package chromium; "
                      "deploy/install-deps.sh --tests installs it): the "
                      "report page is not checked in a browser";
    }
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("tessera_report_browser_", getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }

  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Loads `page` in headless Chromium, offline; the DOM it built, and in
  // *console whatever the page logged to the console.
  std::string RenderInChromium(const std::filesystem::path& page,
                               std::string* console) {
    // No network: every host resolves to nothing, so a fetch would show as
    // a console error.
    return DumpDomInChromium(absl::StrCat("file://", page.string()), dir_,
                             "dom", 60,
                             "--host-resolver-rules='MAP * ~NOTFOUND'",
                             console);
  }

  std::filesystem::path dir_;
};

TEST_F(ReportBrowserTest, PageRendersOfflineAndItsPlotsCarryTheStoresNumbers) {
  const auto started = std::chrono::steady_clock::now();
  // A planner with its store, and two agents.
  service::PlannerOptions options;
  options.db_path = (dir_ / "planner.db").string();
  options.log = service::Log(service::LogLevel::kOff);
  absl::StatusOr<std::unique_ptr<service::PlannerServer>> server =
      service::PlannerServer::Start("127.0.0.1:0", options);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string address = (*server)->address();
  ScriptedAgent agent_a(address, "agent-a"), agent_b(address, "agent-b");
  ASSERT_TRUE(agent_a.Register().ok());
  ASSERT_TRUE(agent_b.Register().ok());

  const std::filesystem::path spec = dir_ / "study.json";
  std::ofstream(spec) << R"({"name": "browser <check>",
    "model": {"preset": "tiny"},
    "cluster": {"gpu": {"preset": "h100-sxm"}, "nodes": 1,
                "gpus_per_node": 8},
    "training": {"global_batch": 16, "seq_len": 128, "total_tokens": 1e9},
    "search": {"top": 5},
    "trials": {"max_trials": 2, "warmup_steps": 4, "steps": 36}})";
  CliRun r = RunCli({"submit", spec.string(), "--planner", address});
  ASSERT_EQ(r.status, 0) << r.err;
  int64_t study_id = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(r.out), &study_id));

  // Each agent runs one trial: a's with power, b's without and with a loss
  // that is not finite at one step (a gap in its line).
  const std::optional<v1::TrialAssignment> a = agent_a.Lease();
  ASSERT_TRUE(a.has_value());
  const std::optional<v1::TrialAssignment> b = agent_b.Lease();
  ASSERT_TRUE(b.has_value());
  // Each measures near its prediction, as a calibrated model would have it.
  r = RunCli({"trials", "--study", absl::StrCat(study_id), "--json",
              "--planner", address});
  ASSERT_EQ(r.status, 0) << r.err;
  std::map<int64_t, double> predicted;
  for (const nlohmann::json& t : nlohmann::json::parse(r.out)) {
    predicted[t["id"].get<int64_t>()] =
        t["predicted"]["tokens_per_s"].get<double>();
  }
  ASSERT_GT(predicted[a->trial_id()], 0) << r.out;
  ASSERT_GT(predicted[b->trial_id()], 0) << r.out;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(
      agent_a.ReportOk(*a, 0.87 * predicted[a->trial_id()], 410.0, 10.4, -1)
          .ok());
  constexpr int kNanStep = 17;
  ASSERT_TRUE(agent_b
                  .ReportOk(*b, 1.06 * predicted[b->trial_id()], std::nullopt,
                            9.7, kNanStep)
                  .ok());
  bool done = false;
  for (int i = 0; i < 100 && !done; ++i) {
    r = RunCli({"studies", "--json", "--planner", address});
    done = r.out.find("\"done\"") != std::string::npos;
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(done) << r.out;

  const std::filesystem::path page = dir_ / "report.html";
  r = RunCli({"report", absl::StrCat(study_id), "--out", page.string(),
              "--planner", address});
  ASSERT_EQ(r.status, 0) << r.err;
  server->reset();  // the store is the planner's no more
  // Read from the store file with no planner (--db), the plots are the
  // same: from the page's first plot to its last.
  const std::filesystem::path db_page = dir_ / "report-db.html";
  r = RunCli({"report", absl::StrCat(study_id), "--out", db_page.string(),
              "--db", options.db_path});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(Between(ReadFile(db_page), "<h2>Pareto front", "<h2>Trials ("),
            Between(ReadFile(page), "<h2>Pareto front", "<h2>Trials ("));

  // What the store holds.
  absl::StatusOr<std::unique_ptr<db::SqliteTrialStore>> store =
      db::SqliteTrialStore::Open(options.db_path);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<db::Trial> ta = (*store)->GetTrial(a->trial_id());
  absl::StatusOr<db::Trial> tb = (*store)->GetTrial(b->trial_id());
  ASSERT_TRUE(ta.ok() && tb.ok());
  ASSERT_TRUE(ta->measured.has_value() && ta->predicted.has_value());
  absl::StatusOr<std::vector<db::TrialMetric>> steps_a =
      (*store)->GetTrialMetrics(a->trial_id());
  absl::StatusOr<std::vector<db::TrialMetric>> steps_b =
      (*store)->GetTrialMetrics(b->trial_id());
  ASSERT_TRUE(steps_a.ok() && steps_b.ok());
  ASSERT_EQ(steps_a->size(),
            static_cast<size_t>(a->warmup_steps() + a->steps()));
  ASSERT_GT(steps_b->size(), static_cast<size_t>(kNanStep));
  absl::StatusOr<db::Study> study = (*store)->GetStudy(study_id);
  ASSERT_TRUE(study.ok());
  absl::StatusOr<v1::Recommendation> recommendation =
      service::RecommendationFromJson(study->recommendation_json);
  ASSERT_TRUE(recommendation.ok()) << recommendation.status();

  // The page in the browser: rendered, quiet, self-contained.
  const std::string source = ReadFile(page);
  EXPECT_EQ(source.find("<script"), std::string::npos);
  EXPECT_EQ(source.find(" src="), std::string::npos);
  EXPECT_EQ(source.find(" href="), std::string::npos);
  std::string console;
  const std::string dom = RenderInChromium(page, &console);
  EXPECT_EQ(console, "") << "the page logged to the browser's console";
  ASSERT_NE(dom.find("</html>"), std::string::npos) << dom.substr(0, 2000);
  EXPECT_NE(dom.find("browser &lt;check&gt;"), std::string::npos);
  const std::string sa = absl::StrCat(a->trial_id());
  const std::string sb = absl::StrCat(b->trial_id());
  std::map<std::string, std::string> plot;
  for (const std::string name :
       {"pareto", "error", "loss", "step-time", "breakdown", "timeline"}) {
    plot[name] = Between(dom, "class=\"plot " + name + "\"", "</svg>");
    EXPECT_NE(plot[name], "") << "no " << name << " plot in the DOM";
  }

  // Loss and step time per step: every stored step of trial a is a point
  // carrying the stored value; trial b's unrecorded loss is a gap (two
  // lines, no point), never a 0.
  const std::string loss_a =
      Between(plot["loss"], "data-trial=\"" + sa + "\"", "</g>");
  const std::string time_a =
      Between(plot["step-time"], "data-trial=\"" + sa + "\"", "</g>");
  for (const db::TrialMetric& m : *steps_a) {
    const std::string step = absl::StrCat("data-step=\"", m.step, "\"");
    EXPECT_EQ(Attribute(loss_a, {step}, "data-loss"), m.loss) << step;
    EXPECT_EQ(Attribute(time_a, {step}, "data-step-time-s"), m.step_time_s)
        << step;
  }
  const std::string loss_b =
      Between(plot["loss"], "data-trial=\"" + sb + "\"", "</g>");
  ASSERT_TRUE(std::isnan((*steps_b)[kNanStep].loss));
  EXPECT_TRUE(std::isnan(Attribute(
      loss_b, {absl::StrCat("data-step=\"", kNanStep, "\"")}, "data-loss")));
  EXPECT_EQ(Attribute(loss_b, {"data-step=\"3\""}, "data-loss"),
            (*steps_b)[3].loss);
  EXPECT_EQ(Count(loss_b, "<polyline"), 2) << loss_b;

  // Measured against predicted: the stored tokens/s, both sides.
  const std::vector<std::string> point_a = {"data-trial=\"" + sa + "\""};
  EXPECT_EQ(Attribute(plot["error"], point_a, "data-measured-tokens-per-s"),
            ta->measured->tokens_per_s);
  EXPECT_EQ(Attribute(plot["error"], point_a, "data-predicted-tokens-per-s"),
            ta->predicted->tokens_per_s);
  EXPECT_NEAR(
      Attribute(plot["error"], point_a, "data-error-pct"),
      100 * (ta->measured->tokens_per_s / ta->predicted->tokens_per_s - 1),
      1e-9);

  // The breakdown: trial a's measured parts are the stored ones; its
  // predicted bar is broken down by the cost model.
  const std::string measured_a =
      Between(plot["breakdown"],
              "data-trial=\"" + sa + "\" data-kind=\"measured\"", "</g>");
  EXPECT_EQ(Attribute(measured_a, {"data-part=\"compute\""}, "data-seconds"),
            ta->measured->compute_s);
  EXPECT_EQ(Attribute(measured_a, {"data-part=\"exposed communication\""},
                      "data-seconds"),
            ta->measured->exposed_comm_s);
  const std::string predicted_a =
      Between(plot["breakdown"],
              "data-trial=\"" + sa + "\" data-kind=\"predicted\"", "</g>");
  EXPECT_GT(Attribute(predicted_a, {"data-part=\"compute\""}, "data-seconds"),
            0)
      << predicted_a;

  // The timeline: each trial on its agent's lane, from its stored start to
  // its stored end.
  const std::string lane_a =
      Between(plot["timeline"], "data-agent=\"agent-a\"", "</g>");
  EXPECT_EQ(Attribute(lane_a, point_a, "data-started-unix-ms"),
            absl::ToUnixMillis(*ta->started_at));
  EXPECT_EQ(Attribute(lane_a, point_a, "data-finished-unix-ms"),
            absl::ToUnixMillis(*ta->finished_at));
  const std::string lane_b =
      Between(plot["timeline"], "data-agent=\"agent-b\"", "</g>");
  EXPECT_EQ(
      Attribute(lane_b, {"data-trial=\"" + sb + "\""}, "data-started-unix-ms"),
      absl::ToUnixMillis(*tb->started_at));

  // The Pareto front: a line through the stored front's points, each
  // labelled and carrying its stored numbers.
  int drawn = 0;
  for (const v1::RecommendedLayout& l : recommendation->pareto()) {
    if (l.tokens_per_joule() <= 0) continue;
    ++drawn;
    const std::string tps = ExactNumber(l.tokens_per_s());
    EXPECT_EQ(Attribute(plot["pareto"], {"data-tokens-per-s=\"" + tps + "\""},
                        "data-tokens-per-joule"),
              l.tokens_per_joule())
        << tps;
  }
  ASSERT_GT(drawn, 0);
  EXPECT_EQ(Count(plot["pareto"], "class=\"point-label\""), drawn);
  EXPECT_EQ(Count(plot["pareto"], "<polyline"), drawn >= 2 ? 1 : 0);

  // Trial b measured no power: a dash, not 0 W.
  EXPECT_EQ(dom.find(">0 W<"), std::string::npos);

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  EXPECT_LT(seconds, 60);
}

}  // namespace
}  // namespace tessera::cli
