// The service commands without a planner: help, bad input (exit 2, one line
// naming the flag, the field or the id, nothing on stdout), and a planner
// that cannot be reached (exit 1, one line) or never answers (the deadline).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_test_util.h"
#include "tests/cli/free_port.h"

namespace tessera::cli {
namespace {

using Args = std::vector<std::string>;

std::string TempFile(const std::string& name, const std::string& text) {
  const std::string path =
      (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

int Lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

std::string Joined(const Args& args) {
  std::string s;
  for (const std::string& a : args) s += a + " ";
  return s;
}

const Args kServiceCommands = {"submit", "watch",   "studies", "trials",
                               "best",   "history", "report",  "cancel"};

TEST(ServiceCommandsTest, TopLevelHelpListsEveryCommand) {
  const CliRun r = RunCli({"--help"});
  ASSERT_EQ(r.status, 0);
  for (const std::string& c : kServiceCommands) {
    EXPECT_NE(r.out.find("\n  " + c + " "), std::string::npos) << c;
  }
}

TEST(ServiceCommandsTest, HelpDocumentsFlagsAndExitCodes) {
  const std::vector<std::pair<std::string, Args>> expected = {
      {"submit",
       {"Usage: tessera submit STUDY.json", "--wait", "--planner HOST:PORT",
        "--timeout SECONDS", "--tls-ca FILE", "--auth-token-file FILE"}},
      {"watch",
       {"Usage: tessera watch ID", "--reconnect SECONDS", "MEASURED",
        "PREDICTED"}},
      {"studies", {"--state S", "--model M", "--gpu G", "--json", "--limit N"}},
      {"trials",
       {"--study ID", "--state S,...", "--model M", "--gpu G", "--tp N",
        "--pp N", "--cp N", "--zero N", "--micro-batch N", "--recompute R",
        "--since T", "--until T", "--sort KEY", "--limit N", "--json", "--csv",
        "7d, 2w", "failed is oom, nan", "tokens_per_s"}},
      {"best",
       {"Usage: tessera best ID", "--objective throughput|energy", "--json"}},
      {"history",
       {"--tp N", "--model M", "--gpu G", "--since T", "--json", "--csv"}},
      {"report", {"Usage: tessera report ID", "--out FILE"}},
      {"cancel", {"Usage: tessera cancel ID"}},
      {"plan", {"--planner HOST:PORT", "--timeout SECONDS"}},
      {"predict", {"--planner HOST:PORT", "--timeout SECONDS"}},
  };
  for (const auto& [command, texts] : expected) {
    SCOPED_TRACE(command);
    const CliRun r = RunCli({command, "--help"});
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.err, "");
    for (const std::string& text : texts) {
      EXPECT_NE(r.out.find(text), std::string::npos) << text;
    }
    EXPECT_NE(r.out.find("Exit status:"), std::string::npos);
    if (command != "plan" && command != "predict") {
      EXPECT_NE(r.out.find("  1  the planner cannot be reached"),
                std::string::npos);
      EXPECT_NE(r.out.find("an unknown study (NOT_FOUND)"), std::string::npos);
    }
  }
}

TEST(ServiceCommandsTest, BadInputExitsTwoBeforeAnyCall) {
  // Nothing listens here; every case must fail before trying to call.
  const std::string planner = absl::StrCat("127.0.0.1:", UnusedLoopbackPort());
  const std::string malformed =
      TempFile("tessera_submit_malformed.json", "{\"model\": ");
  const std::string unknown_field =
      TempFile("tessera_submit_unknown.json",
               R"({"model": {"preset": "tiny"}, "clusterr": {}})");
  const std::vector<std::pair<Args, std::string>> cases = {
      {{"submit"}, "missing STUDY.json (usage: tessera submit"},
      {{"submit", "a.json", "b.json"}, "unexpected argument 'b.json'"},
      {{"submit", "/nonexistent/study.json"},
       "spec: /nonexistent/study.json: cannot read"},
      {{"submit", malformed}, "spec: " + malformed + ": malformed JSON"},
      {{"submit", unknown_field},
       "spec: " + unknown_field + ": unknown field 'clusterr'"},
      {{"submit", "--wiat", unknown_field},
       "--wiat: unknown flag (did you mean --wait?)"},
      {{"watch"}, "missing ID (usage: tessera watch ID)"},
      {{"watch", "abc"}, "study: 'abc' is not a study id"},
      {{"watch", "7", "--reconnect", "-1"},
       "--reconnect: must not be negative"},
      {{"best", "7", "--objective", "speed"},
       "--objective: 'speed' is not an objective (throughput or energy)"},
      {{"best", "0"}, "study: '0' is not a study id"},
      {{"report"}, "missing ID (usage: tessera report ID)"},
      {{"report", "x7"}, "study: 'x7' is not a study id"},
      {{"report", "7", "--out"}, "--out"},
      {{"cancel", "-3"}, "-3: unknown flag"},
      {{"cancel", "7", "8"}, "unexpected argument '8'"},
      {{"studies", "--state", "bogus"}, "--state: unknown study state 'bogus'"},
      {{"studies", "--limit", "0"}, "--limit: must be at least 1"},
      {{"trials", "--tp", "0"}, "--tp: must be at least 1, got 0"},
      {{"trials", "--json", "--csv"}, "--csv: give --json or --csv, not both"},
      {{"trials", "--study", "0"}, "--study: must be a study id"},
      {{"trials", "--since", "yesterday"},
       "--since: 'yesterday' is not a time"},
      {{"trials", "--state", "ok,lost"}, "--state: unknown trial state 'lost'"},
      {{"trials", "extra"}, "unexpected argument 'extra'"},
      {{"history", "--zero", "5"}, "--zero: must be 0 to 3, got 5"},
      {{"history", "--json", "--csv"}, "--csv: give --json or --csv"},
      {{"studies", "--timeout", "0"}, "--timeout: must be positive"},
      {{"plan", "--spec", ExampleSpecPath(), "--timeout", "-1"},
       "--timeout: must be positive"},
  };
  for (const auto& [args, expected] : cases) {
    SCOPED_TRACE(Joined(args));
    Args with_planner = args;
    if (args[0] != "plan") {
      with_planner.push_back("--planner");
      with_planner.push_back(planner);
    }
    const CliRun r = RunCli(with_planner);
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(Lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("tessera " + args[0] + ": ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("cannot reach"), std::string::npos) << r.err;
  }
  std::remove(malformed.c_str());
  std::remove(unknown_field.c_str());
}

TEST(ServiceCommandsTest, UnreachablePlannerExitsOneWithOneLine) {
  const std::string address = absl::StrCat("127.0.0.1:", UnusedLoopbackPort());
  const std::vector<Args> cases = {
      {"submit", ExampleSpecPath()},
      {"submit", ExampleSpecPath(), "--wait"},
      {"watch", "7"},
      {"studies"},
      {"trials", "--study", "7", "--csv"},
      {"best", "7"},
      {"report", "7", "--out", "-"},
      {"history", "--tp", "8"},
      {"cancel", "7"},
      {"plan", "--spec", ExampleSpecPath()},
      {"predict", "--spec", ExampleSpecPath(), "--layout", "tp=2"},
  };
  for (Args args : cases) {
    SCOPED_TRACE(Joined(args));
    args.push_back("--planner");
    args.push_back(address);
    const auto start = std::chrono::steady_clock::now();
    const CliRun r = RunCli(args);
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(Lines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind(
                  absl::StrCat("tessera ", args[0],
                               ": cannot reach the planner at ", address, " ("),
                  0),
              0u)
        << r.err;
    // The history commands can read the planner's file without it: the
    // error says how; the others cannot.
    const bool history = args[0] == "studies" || args[0] == "trials" ||
                         args[0] == "best" || args[0] == "report" ||
                         args[0] == "history";
    EXPECT_EQ(
        r.err.find("give its SQLite file: --db FILE") != std::string::npos,
        history)
        << r.err;
    // A refused connection is known at once, long before the deadline.
    EXPECT_LT(std::chrono::steady_clock::now() - start,
              std::chrono::seconds(10));
  }
}

TEST(ServiceCommandsTest, PlannerAddressFromTheEnvironment) {
  const std::string address = absl::StrCat("127.0.0.1:", UnusedLoopbackPort());
  ASSERT_EQ(setenv("TESSERA_PLANNER", address.c_str(), 1), 0);
  CliRun r = RunCli({"studies"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("cannot reach the planner at " + address),
            std::string::npos)
      << r.err;
  // --planner wins over the environment.
  const std::string other = absl::StrCat("127.0.0.1:", UnusedLoopbackPort());
  r = RunCli({"studies", "--planner", other});
  EXPECT_NE(r.err.find("cannot reach the planner at " + other),
            std::string::npos)
      << r.err;
  // plan and predict stay local without --planner, whatever the
  // environment says.
  r = RunCli({"plan", "--spec", ExampleSpecPath(), "--top", "1"});
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(unsetenv("TESSERA_PLANNER"), 0);
  // Without either: the default address.
  r = RunCli({"best", "7", "--timeout", "5"});
  EXPECT_NE(r.err.find("the planner at 127.0.0.1:50051"), std::string::npos)
      << r.err;
}

TEST(ServiceCommandsTest, APlannerThatNeverAnswersHitsTheDeadline) {
  SilentListener silent;
  ASSERT_TRUE(silent.ok());
  const std::string address = absl::StrCat("127.0.0.1:", silent.port());
  const auto start = std::chrono::steady_clock::now();
  const CliRun r =
      RunCli({"studies", "--planner", address, "--timeout", "0.5"});
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("tessera studies: cannot reach the planner at " +
                       address + " (no connection within 500ms)"),
            std::string::npos)
      << r.err;
  EXPECT_GE(elapsed, std::chrono::milliseconds(450));
  EXPECT_LT(elapsed, std::chrono::seconds(10));
}

}  // namespace
}  // namespace tessera::cli
