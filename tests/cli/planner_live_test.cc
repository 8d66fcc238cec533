// The service commands against a real planner (planner/service/server.h's
// PlannerServer on 127.0.0.1:0 with a temporary database): submit, watch,
// studies, trials, best, history, cancel, and plan/predict through
// --planner, end to end over gRPC. No agent runs here, so trials stay
// queued; a study of `"trials": {"max_trials": 0}` ends at once with a
// predicted recommendation.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "planner/service/server.h"
#include "tests/cli/cli_test_util.h"

namespace tessera::cli {
namespace {

using Args = std::vector<std::string>;
using nlohmann::json;

int Lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

// A tiny Llama on one 8-GPU H100 node: small enough that the planner ranks
// it at once.
std::string TinyStudy(const std::string& name, const std::string& trials) {
  return absl::StrCat(R"({"name": ")", name, R"(",
    "model": {"preset": "tiny"},
    "cluster": {"gpu": {"preset": "h100-sxm"}, "nodes": 1,
                "gpus_per_node": 8},
    "training": {"global_batch": 16, "seq_len": 128, "total_tokens": 1e9},
    "search": {"top": 5},
    "trials": )",
                      trials, "}");
}

class PlannerLiveTest : public testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("tessera_cli_live_", getpid(), "_", counter++);
    std::filesystem::create_directories(dir_);
    service::PlannerOptions options;
    options.db_path = (dir_ / "planner.db").string();
    options.log = service::Log(service::LogLevel::kOff);
    absl::StatusOr<std::unique_ptr<service::PlannerServer>> server =
        service::PlannerServer::Start("127.0.0.1:0", options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }

  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string File(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  // `tessera args... --planner <the server>`.
  CliRun Run(Args args) {
    args.push_back("--planner");
    args.push_back(server_->address());
    return RunCli(args);
  }

  // Submits a study and returns its id (0 on failure, with the test failed).
  int64_t Submit(const std::string& name, const std::string& trials) {
    const CliRun r =
        Run({"submit", File(name + ".json", TinyStudy(name, trials))});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err, "");
    int64_t id = 0;
    EXPECT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(r.out), &id))
        << r.out;
    EXPECT_EQ(r.out, absl::StrCat(id, "\n"));
    return id;
  }

  std::filesystem::path dir_;
  std::unique_ptr<service::PlannerServer> server_;
};

TEST_F(PlannerLiveTest, SubmitPrintsAnIdAndTheStudyIsListed) {
  const int64_t id = Submit("queued-study", R"({"max_trials": 3})");
  ASSERT_GT(id, 0);
  EXPECT_EQ(Submit("second", R"({"max_trials": 3})"), id + 1);

  CliRun r = Run({"studies"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("queued-study"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.rfind("id  name", 0), 0u) << r.out;
  r = Run({"studies", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json studies = json::parse(r.out);
  ASSERT_EQ(studies.size(), 2u);
  json mine;
  for (const json& s : studies) {
    if (s["id"] == id) mine = s;
  }
  ASSERT_FALSE(mine.is_null()) << r.out;
  EXPECT_EQ(mine["name"], "queued-study");
  EXPECT_EQ(mine["model"], "tiny");
  EXPECT_EQ(mine["gpus"], 8);
  EXPECT_EQ(mine["trials_done"], 0);
  EXPECT_TRUE(mine["state"] == "queued" || mine["state"] == "running") << mine;
  // Filters reach the planner: no study is done yet.
  r = Run({"studies", "--state", "done", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json::parse(r.out), json::array());
}

TEST_F(PlannerLiveTest, WithoutAgentsTheStudyWaitsAndNoTrialIsQueued) {
  const int64_t id = Submit("no-agents", R"({"max_trials": 3})");
  ASSERT_GT(id, 0);
  const std::string sid = absl::StrCat(id);
  // The planner queues a study's trials once agents that can run them are
  // there: until then the study says why it waits, and has no trials.
  CliRun r = Run({"studies", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json study = json::parse(r.out).at(0);
  EXPECT_EQ(study["state"], "queued");
  EXPECT_NE(study["state_reason"].get<std::string>().find("waiting for agents"),
            std::string::npos)
      << study;
  r = Run({"studies"});
  EXPECT_NE(r.out.find("waiting for agents"), std::string::npos) << r.out;
  r = Run({"trials", "--study", sid});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("id  study  rung  state  layout  steps  tokens/s", 0),
            0u)
      << r.out;
  EXPECT_EQ(Lines(r.out), 1) << r.out;  // the header alone
  r = Run({"trials", "--study", sid, "--csv"});
  EXPECT_EQ(Lines(r.out), 1) << r.out;
  EXPECT_EQ(json::parse(Run({"trials", "--json"}).out), json::array());
  EXPECT_EQ(json::parse(Run({"history", "--json"}).out), json::array());
  // best: nothing chosen yet, provisional.
  r = Run({"best", sid});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(
      r.out.rfind(
          "study " + sid + " (provisional: the study is still running)\n", 0),
      0u)
      << r.out;
  // An unknown sort key is the planner's INVALID_ARGUMENT: exit 2, its
  // message.
  r = Run({"trials", "--sort", "speed"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("tessera trials: sort: 'speed' is not one of"),
            std::string::npos)
      << r.err;
}

TEST_F(PlannerLiveTest, NoTrialsEndsAtOnceWithAPredictedRecommendation) {
  const int64_t id = Submit("predicted-only", R"({"max_trials": 0})");
  ASSERT_GT(id, 0);
  const std::string sid = absl::StrCat(id);

  CliRun r = Run({"best", sid});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(
      r.out.rfind("study " + sid + "\nbest throughput (tokens/s): tp=", 0), 0u)
      << r.out;
  EXPECT_NE(r.out.find("  PREDICTED: "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("MEASURED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  full run: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nhistory: " + (dir_ / "planner.db").string()),
            std::string::npos)
      << r.out;

  r = Run({"best", sid, "--objective", "energy", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json energy = json::parse(r.out);
  EXPECT_EQ(energy["study_id"], id);
  EXPECT_EQ(energy["objective"], "energy");
  EXPECT_EQ(energy["final"], true);
  EXPECT_EQ(energy["recommended"]["provenance"], "PREDICTED");
  EXPECT_TRUE(energy["recommended"]["trial_id"].is_null());
  EXPECT_GT(energy["recommended"]["tokens_per_joule"].get<double>(), 0);
  EXPECT_GT(energy["recommended"]["full_run"]["days"].get<double>(), 0);
  const json throughput =
      json::parse(Run({"best", sid, "--json"}).out)["recommended"];
  // The energy-best layout has at least the throughput-best's tokens/J,
  // and at most its tokens/s.
  EXPECT_GE(energy["recommended"]["tokens_per_joule"].get<double>(),
            throughput["tokens_per_joule"].get<double>());
  EXPECT_LE(energy["recommended"]["tokens_per_s"].get<double>(),
            throughput["tokens_per_s"].get<double>());

  // watch of a study that is already done: the final state and the whole
  // recommendation, exit 0.
  r = Run({"watch", sid});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\nstudy " + sid + " done"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("study " + sid + " recommendation:\nbest throughput: "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("calibration: "), std::string::npos);
  EXPECT_NE(r.out.find("history: "), std::string::npos);
  // Not a terminal: every progress line is a whole line.
  EXPECT_EQ(r.out.find('\r'), std::string::npos);
  EXPECT_NE(r.out.find("study " + sid + " done ["), std::string::npos) << r.out;

  // submit --wait: the id, then the same ending.
  r = Run({"submit",
           File("wait.json", TinyStudy("wait", R"({"max_trials": 0})")),
           "--wait"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind(absl::StrCat(id + 1, "\n"), 0), 0u) << r.out;
  EXPECT_NE(r.out.find(absl::StrCat("study ", id + 1, " recommendation:")),
            std::string::npos)
      << r.out;
}

TEST_F(PlannerLiveTest, CancelEndsTheStudyAndWatchSaysSo) {
  const int64_t id = Submit("to-cancel", R"({"max_trials": 4})");
  ASSERT_GT(id, 0);
  const std::string sid = absl::StrCat(id);
  CliRun r = Run({"cancel", sid});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("study " + sid + " cancelled: 0/", 0), 0u) << r.out;
  r = Run({"studies", "--state", "cancelled", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(json::parse(r.out).size(), 1u) << r.out;
  EXPECT_EQ(json::parse(r.out)[0]["id"], id);
  r = Run({"watch", sid});
  EXPECT_EQ(r.status, 4) << r.err;
  EXPECT_NE(r.out.find("\nstudy " + sid + " cancelled"), std::string::npos)
      << r.out;
  r = Run({"trials", "--study", sid, "--state", "queued", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json::parse(r.out), json::array()) << "queued after cancel";
}

TEST_F(PlannerLiveTest, UnknownStudyExitsTwoNamingIt) {
  for (const Args& args : std::vector<Args>{
           {"best", "424242"}, {"watch", "424242"}, {"cancel", "424242"}}) {
    SCOPED_TRACE(args[0]);
    const CliRun r = Run(args);
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(Lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("tessera " + args[0] + ": ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("study 424242"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("not found"), std::string::npos) << r.err;
  }
}

TEST_F(PlannerLiveTest, ThePlannersOwnValidationExitsTwoNamingTheField) {
  // Valid for the local checks (the workload), invalid for the planner
  // (the trial options).
  const std::string path =
      File("bad_eta.json", TinyStudy("bad-eta", R"({"eta": 1})"));
  const CliRun r = Run({"submit", path});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("tessera submit: spec: " + path + ": "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("trials.eta"), std::string::npos) << r.err;
  // Nothing was stored.
  EXPECT_EQ(json::parse(Run({"studies", "--json"}).out), json::array());
}

TEST_F(PlannerLiveTest, PlanAndPredictThroughThePlannerGiveTheLocalJson) {
  const std::string spec = ExampleSpecPath();
  const CliRun local = RunCli({"plan", "--spec", spec, "--json"});
  const CliRun remote = Run({"plan", "--spec", spec, "--json"});
  ASSERT_EQ(local.status, 0) << local.err;
  ASSERT_EQ(remote.status, 0) << remote.err;
  json a = json::parse(local.out);
  json b = json::parse(remote.out);
  a.erase("elapsed_ms");
  b.erase("elapsed_ms");
  EXPECT_EQ(a, b);
  // The table too, but for the search time.
  const CliRun local_text = RunCli({"plan", "--spec", spec, "--top", "3"});
  const CliRun remote_text = Run({"plan", "--spec", spec, "--top", "3"});
  auto without_time = [](std::string s) {
    const size_t in = s.find(" layouts in ");
    const size_t ms = s.find(" ms (", in);
    return s.erase(in, ms - in);
  };
  EXPECT_EQ(without_time(local_text.out), without_time(remote_text.out));

  for (const std::string layout :
       {"tp=2,zero=3,micro_batch=2", "tp=3", "tp=1,pp=1,micro_batch=64"}) {
    SCOPED_TRACE(layout);
    const Args args = {"predict", "--spec", spec, "--layout", layout, "--json"};
    const CliRun l = RunCli(args);
    const CliRun p = Run(args);
    ASSERT_EQ(l.status, 0) << l.err;
    ASSERT_EQ(p.status, 0) << p.err;
    EXPECT_EQ(json::parse(l.out), json::parse(p.out));
  }
  // Bad input is still found before any call, and the same.
  const CliRun bad = Run({"predict", "--spec", spec, "--layout", "tp=x"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err,
            RunCli({"predict", "--spec", spec, "--layout", "tp=x"}).err);
}

}  // namespace
}  // namespace tessera::cli
