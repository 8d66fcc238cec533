// tessera-planner's dashboard in a real browser: a real planner (PlannerServer
// on 127.0.0.1:0 with its SQLite store), two agents speaking the real
// AgentService protocol, the dashboard (DashboardServer) on the planner's
// store, and headless Chromium (Debian's `chromium`) on the page. The page
// loads once; while it waits on the planner a trial lands; the DOM Chromium
// ends with has redrawn itself (data-updates, one page served) and its
// plots carry the store's numbers for the trial that landed. Studies of 0,
// 1 and 500 trials render without a console error. Without Chromium the
// test is skipped, saying so.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/svg_chart.h"
#include "dashboard/dashboard_server.h"
#include "db/sqlite_trial_store.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "service/server.h"
#include "tests/cli/browser_test_util.h"
#include "tests/cli/cli_test_util.h"

namespace tessera::dashboard {
namespace {

using cli::Attribute;
using cli::Between;
using cli::CliRun;
using cli::Count;
using cli::kChromium;
using cli::RunCli;
using cli::ScriptedAgent;

constexpr char kSpec[] = R"({"name": "live <check>",
  "model": {"preset": "tiny"},
  "cluster": {"gpu": {"preset": "h100-sxm"}, "nodes": 1, "gpus_per_node": 8},
  "training": {"global_batch": 16, "seq_len": 128, "total_tokens": 1e9},
  "search": {"top": 5},
  "trials": {"max_trials": 2, "warmup_steps": 4, "steps": 36}})";

class DashboardBrowserTest : public testing::Test {
 protected:
  void SetUp() override {
    if (access(kChromium, X_OK) != 0) {
      GTEST_SKIP() << kChromium
                   << " is not installed (Debian package chromium; "
                      "deploy/install-deps.sh --tests installs it): the "
                      "dashboard is not checked in a browser";
    }
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("tessera_dashboard_browser_", getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }

  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Headless Chromium on `url` for `budget_ms` of the page's own (virtual)
  // time, which stands still while a request is out: the DOM it ends with,
  // and in *console what the page logged to the console.
  std::string DumpDom(const std::string& url, int budget_ms,
                      const std::string& name, std::string* console) {
    return cli::DumpDomInChromium(
        url, dir_, name, 120, absl::StrCat("--virtual-time-budget=", budget_ms),
        console);
  }

  std::unique_ptr<DashboardServer> Dashboard(const std::string& db_path) {
    absl::StatusOr<std::unique_ptr<DashboardServer>> d =
        DashboardServer::Start({.listen = "127.0.0.1:0",
                                .db_path = db_path,
                                .poll_hold = absl::Seconds(1),
                                .poll_check = absl::Milliseconds(50)});
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? *std::move(d) : nullptr;
  }

  std::filesystem::path dir_;
};

// The value of the body's `data-name` attribute in a dumped DOM.
std::string BodyData(const std::string& dom, const std::string& name) {
  const std::string body = Between(dom, "<body", ">");
  const std::string key = " data-" + name + "=\"";
  const size_t at = body.find(key);
  if (at == std::string::npos) return "";
  const size_t from = at + key.size();
  return body.substr(from, body.find('"', from) - from);
}

TEST_F(DashboardBrowserTest, RedrawsAsATrialLandsWithTheStoresNumbers) {
  service::PlannerOptions options;
  options.db_path = (dir_ / "planner.db").string();
  options.log = service::Log(service::LogLevel::kOff);
  absl::StatusOr<std::unique_ptr<service::PlannerServer>> server =
      service::PlannerServer::Start("127.0.0.1:0", options);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string address = (*server)->address();
  std::unique_ptr<DashboardServer> dashboard = Dashboard(options.db_path);
  ASSERT_NE(dashboard, nullptr);
  ScriptedAgent agent_a(address, "agent-a"), agent_b(address, "agent-b");
  ASSERT_TRUE(agent_a.Register().ok());
  ASSERT_TRUE(agent_b.Register().ok());
  const std::filesystem::path spec = dir_ / "study.json";
  std::ofstream(spec) << kSpec;
  CliRun r = RunCli({"submit", spec.string(), "--planner", address});
  ASSERT_EQ(r.status, 0) << r.err;
  int64_t study_id = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(r.out), &study_id));

  // Trial a lands before the page opens; trial b is running.
  const std::optional<v1::TrialAssignment> a = agent_a.Lease();
  ASSERT_TRUE(a.has_value());
  const std::optional<v1::TrialAssignment> b = agent_b.Lease();
  ASSERT_TRUE(b.has_value());
  ASSERT_TRUE(agent_a.ReportOk(*a, 52000, 410.0, 10.4, -1).ok());

  // The page opens on the study and waits on the planner; then b lands.
  const std::string url =
      absl::StrCat(dashboard->url(), "#study=", study_id);
  std::string console;
  std::future<std::string> dom = std::async(std::launch::async, [&] {
    return DumpDom(url, 2500, "live", &console);
  });
  for (int i = 0; i < 600 && dashboard->waits_held() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const bool waited = dashboard->waits_held() > 0;
  ASSERT_TRUE(agent_b.ReportOk(*b, 61000, std::nullopt, 9.7, 17).ok());
  const std::string page = dom.get();
  EXPECT_EQ(console, "") << "the page logged to the browser's console";
  ASSERT_TRUE(waited) << "the page never waited on the planner\n"
                      << page.substr(0, 3000);
  ASSERT_NE(page.find("</html>"), std::string::npos) << page.substr(0, 2000);

  // Redrawn in place: one page load, at least one redraw, shown.
  EXPECT_EQ(dashboard->pages_served(), 1);
  EXPECT_EQ(BodyData(page, "state"), "shown") << Between(page, "<body", ">");
  int updates = 0;
  ASSERT_TRUE(absl::SimpleAtoi(BodyData(page, "updates"), &updates));
  EXPECT_GE(updates, 1);
  EXPECT_NE(page.find("live &lt;check&gt;"), std::string::npos);

  // Every plot, as the report draws them.
  std::map<std::string, std::string> plot;
  for (const std::string name : {"pareto", "error", "parallel", "loss",
                                 "step-time", "breakdown", "timeline"}) {
    plot[name] = Between(page, "class=\"plot " + name + "\"", "</svg>");
    EXPECT_NE(plot[name], "") << "no " << name << " plot in the DOM";
  }

  // The store's numbers for b, the trial that landed while the page was
  // open.
  absl::StatusOr<std::unique_ptr<db::SqliteTrialStore>> store =
      db::SqliteTrialStore::Open(options.db_path);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<db::Trial> tb = (*store)->GetTrial(b->trial_id());
  ASSERT_TRUE(tb.ok() && tb->measured.has_value() && tb->predicted.has_value());
  absl::StatusOr<std::vector<db::TrialMetric>> steps_b =
      (*store)->GetTrialMetrics(b->trial_id());
  ASSERT_TRUE(steps_b.ok());
  const std::string sb = absl::StrCat(b->trial_id());
  const std::vector<std::string> trial_b = {"data-trial=\"" + sb + "\""};
  EXPECT_EQ(Attribute(plot["error"], trial_b, "data-measured-tokens-per-s"),
            tb->measured->tokens_per_s);
  EXPECT_EQ(Attribute(plot["error"], trial_b, "data-predicted-tokens-per-s"),
            tb->predicted->tokens_per_s);
  EXPECT_EQ(Attribute(plot["parallel"], trial_b, "data-tokens-per-s"),
            tb->measured->tokens_per_s);
  EXPECT_EQ(Attribute(plot["parallel"], trial_b, "data-zero"),
            tb->layout.zero);
  const std::string loss_b =
      Between(plot["loss"], "data-trial=\"" + sb + "\"", "</g>");
  for (const db::TrialMetric& m : *steps_b) {
    if (!std::isfinite(m.loss)) continue;
    const std::string step = absl::StrCat("data-step=\"", m.step, "\"");
    EXPECT_EQ(Attribute(loss_b, {step}, "data-loss"), m.loss) << step;
  }
  const std::string lane_b =
      Between(plot["timeline"], "data-agent=\"agent-b\"", "</g>");
  EXPECT_EQ(Attribute(lane_b, trial_b, "data-finished-unix-ms"),
            absl::ToUnixMillis(*tb->finished_at));
  // The calibration, each coefficient marked fitted or default.
  const int marked = Count(page, "data-fitted=\"true\"") +
                     Count(page, "data-fitted=\"false\"");
  EXPECT_GT(marked, 0) << Between(page, "<h2>Calibration", "</table>");

  // The study list: the study, linked.
  std::string list_console;
  const std::string list =
      DumpDom(dashboard->url(), 300, "list", &list_console);
  EXPECT_EQ(list_console, "");
  EXPECT_NE(list.find(absl::StrCat("href=\"#study=", study_id, "\"")),
            std::string::npos)
      << list.substr(0, 3000);
}

// A TrialResult as an agent reports it, at `tokens_per_s`.
TrialResult Result(const Layout& layout, int64_t steps, double tokens_per_s,
                   double loss0) {
  TrialResult r;
  r.status = TrialStatus::kOk;
  r.layout = layout;
  r.backend = "cpu";
  r.model = "tiny";
  r.device = "scripted cpu";
  r.ranks = 8;
  r.global_batch = 16;
  r.seq_len = 128;
  r.warmup_steps = 2;
  r.steps = steps;
  const double step_s = 16.0 * 128 / tokens_per_s;
  r.step_time_s = {step_s, 0.97 * step_s, 1.03 * step_s};
  r.tokens_per_s = tokens_per_s;
  r.tokens_per_s_per_gpu = tokens_per_s / 8;
  r.tflops_per_gpu = 1.5;
  r.mfu = 0.25;
  r.peak_tflops = 6;
  r.peak_tflops_source = "scripted";
  r.peak_memory_bytes.assign(8, int64_t{1} << 30);
  r.compute_s = 0.61 * step_s;
  r.comm_s = 0.4 * step_s;
  r.exposed_comm_s = 0.23 * step_s;
  for (int64_t i = 0; i < 2 + steps; ++i) {
    r.loss.push_back(loss0 * std::exp(-0.03 * static_cast<double>(i)));
    r.step_times_s.push_back(step_s);
  }
  return r;
}

TEST_F(DashboardBrowserTest, StudiesOfZeroOneAndFiveHundredTrialsRender) {
  // A store written as a planner writes it, without one: three studies.
  const std::string db_path = (dir_ / "sizes.db").string();
  {
    absl::StatusOr<std::unique_ptr<db::SqliteTrialStore>> store =
        db::SqliteTrialStore::Open(db_path);
    ASSERT_TRUE(store.ok()) << store.status();
    db::SqliteTrialStore& s = **store;
    db::AgentRegistration agent;
    agent.id = "agent-a";
    agent.hostname = "agent-a";
    agent.backend = "cpu";
    agent.gpu_count = 8;
    agent.memory_bytes = int64_t{64} << 30;
    agent.interconnect = "shared-memory";
    agent.address = "127.0.0.1";
    ASSERT_TRUE(s.UpsertAgent(agent).ok());
    const std::vector<std::string> layouts = {
        "tp=1,pp=1,zero=0,micro_batch=1", "tp=2,pp=1,zero=1,micro_batch=2",
        "tp=1,pp=2,zero=3,micro_batch=1,recompute=full",
        "tp=2,pp=2,zero=2,micro_batch=1,recompute=selective"};
    for (int trials : {0, 1, 500}) {
      absl::StatusOr<db::Study> study =
          s.CreateStudy({.name = absl::StrCat(trials, " trials"),
                         .spec_json = kSpec,
                         .model = "tiny",
                         .gpu = "h100-sxm",
                         .nodes = 1,
                         .gpus_per_node = 8,
                         .owner = ""});
      ASSERT_TRUE(study.ok()) << study.status();
      std::vector<db::NewTrial> queued;
      for (int i = 0; i < trials; ++i) {
        absl::StatusOr<Layout> l = ResolveLayout(
            *ParseLayout(layouts[static_cast<size_t>(i) % layouts.size()]), 8,
            16);
        ASSERT_TRUE(l.ok()) << l.status();
        queued.push_back({.layout = *l,
                          .steps = 6,
                          .warmup_steps = 2,
                          .predicted = db::TrialPrediction{
                              .tokens_per_s = 50000 + 10.0 * i}});
      }
      if (queued.empty()) continue;
      absl::StatusOr<std::vector<int64_t>> ids =
          s.AddTrials(study->id, queued);
      ASSERT_TRUE(ids.ok()) << ids.status();
      for (size_t i = 0; i < ids->size(); ++i) {
        const int64_t id = (*ids)[i];
        ASSERT_TRUE(
            s.LeaseTrial(id, {"agent-a"}, absl::Now() + absl::Minutes(5)).ok());
        ASSERT_TRUE(s.ReportTrial(id, "agent-a",
                                  Result(queued[i].layout, 6,
                                         48000 + 37.0 * static_cast<double>(i),
                                         10 + 0.001 * static_cast<double>(i)),
                                  absl::Now())
                        .ok());
      }
    }
  }
  std::unique_ptr<DashboardServer> dashboard = Dashboard(db_path);
  ASSERT_NE(dashboard, nullptr);
  const std::map<int64_t, int> trials_of = {{1, 0}, {2, 1}, {3, 500}};
  for (const auto& [study, trials] : trials_of) {
    SCOPED_TRACE(absl::StrCat(trials, " trials"));
    std::string console;
    const std::string page =
        DumpDom(absl::StrCat(dashboard->url(), "#study=", study), 300,
                absl::StrCat("size-", trials), &console);
    EXPECT_EQ(console, "") << "the page logged to the browser's console";
    EXPECT_EQ(BodyData(page, "state"), "shown") << Between(page, "<body", ">");
    EXPECT_NE(page.find(absl::StrCat("Trials (", trials, ")")),
              std::string::npos);
    const std::string parallel =
        Between(page, "<h2>Layouts against throughput", "<h2>Loss");
    EXPECT_EQ(Count(parallel, "<polyline class=\"trial\""), trials);
    if (trials == 0) {
      EXPECT_NE(parallel.find("Nothing to plot"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace tessera::dashboard
