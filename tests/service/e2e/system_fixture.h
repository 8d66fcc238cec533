// The fixture of the end-to-end tests: the real tessera-planner on a free
// loopback port with a temporary history database, tessera-agent daemons,
// and the tessera command line, with helpers to submit a study, read its
// trials and wait for it (system_test.cc, command_backend_test.cc).
#pragma once

#include <dirent.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tessera/v1/service.grpc.pb.h"
#include "tests/service/e2e/system_process.h"

namespace tessera::e2e {

namespace fs = std::filesystem;

// Agents heartbeat every 200 ms; a lease ends 2 s after its last heartbeat
// and a silent agent is gone after 8 s (above the agents' reconnection
// backoff cap of 5 s, agents/backoff.h), so recovery takes seconds.
inline const std::vector<std::string> kFastPlannerFlags = {
    "--heartbeat-interval-ms", "200", "--lease-timeout-s", "2",
    "--agent-timeout-s",       "8"};

// that dies takes them with it.
inline void KillProcessesMentioning(const std::string& text) {
  DIR* proc = opendir("/proc");
  ASSERT_NE(proc, nullptr);
  while (dirent* e = readdir(proc)) {
    int pid = 0;
    if (!absl::SimpleAtoi(e->d_name, &pid) || pid == getpid()) continue;
    std::string cmdline = ReadFile(absl::StrCat("/proc/", pid, "/cmdline"));
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    if (cmdline.find(text) != std::string::npos) kill(pid, SIGKILL);
  }
  closedir(proc);
}

// Rows of `sql` (one integer result) in the history database, read-only.
inline int64_t CountRows(const std::string& db, const std::string& sql) {
  sqlite3* conn = nullptr;
  if (sqlite3_open_v2(db.c_str(), &conn, SQLITE_OPEN_READONLY, nullptr) !=
      SQLITE_OK) {
    sqlite3_close(conn);
    return -1;
  }
  sqlite3_busy_timeout(conn, 5000);
  sqlite3_stmt* stmt = nullptr;
  int64_t n = -1;
  if (sqlite3_prepare_v2(conn, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    n = sqlite3_column_int64(stmt, 0);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(conn);
  return n;
}

class SystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           absl::StrCat(
               "tessera_e2e_", getpid(), "_",
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = (dir_ / "tessera.db").string();
  }
  void TearDown() override {
    agents_.clear();
    planner_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Starts tessera-planner on `port` (0: a free one) and waits until it
  // listens; sets address_ and the stubs.
  void StartPlanner(int port = 0) {
    const std::string out = (dir_ / "planner.out").string();
    fs::remove(out);
    std::vector<std::string> argv = {TESSERA_PLANNER_BIN, "--listen",
                                     absl::StrCat("127.0.0.1:", port), "--db",
                                     db_};
    argv.insert(argv.end(), kFastPlannerFlags.begin(), kFastPlannerFlags.end());
    planner_ = std::make_unique<ChildProcess>(argv, out);
    std::string line;
    ASSERT_TRUE(WaitFor(absl::Seconds(30), [&] {
      const std::string text = ReadFile(out);
      const size_t at = text.find("listening on ");
      if (at == std::string::npos) return false;
      const size_t end = text.find('\n', at);
      if (end == std::string::npos) return false;
      line = text.substr(at + 13, end - at - 13);
      return true;
    })) << ReadFile(out);
    address_ = line;
    auto channel =
        grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
    planner_stub_ = v1::PlannerService::NewStub(channel);
    agent_stub_ = v1::AgentService::NewStub(channel);
  }

  int PlannerPort() const {
    int port = 0;
    EXPECT_TRUE(
        absl::SimpleAtoi(address_.substr(address_.rfind(':') + 1), &port));
    return port;
  }

  std::string AgentDir(const std::string& name) const {
    return (dir_ / ("agent-" + name)).string();
  }

  // tessera-agent `name` of `backend` offering 2 CPU ranks. A command
  // agent gets a --command-policy allowing `programs` (by default torchrun
  // and /bin/sh with plain-word arguments), run as nobody when the test runs
  // as root (as docs/security.md's safe set-up; without root, as the test's user).
  void StartAgent(const std::string& name, const std::string& backend = "cpu",
                  const std::vector<std::string>& programs = {
                      "/usr/bin/torchrun", "/bin/sh"}) {
    std::vector<std::string> argv = {
        TESSERA_AGENT_BIN, "--planner",    address_,       "--id",
        name,              "--backend",    backend,        "--cpu-ranks",
        "2",               "--work-dir",   AgentDir(name), "--trial-binary",
        TESSERA_TRIAL_BIN};
    if (backend == "command") {
      std::string policy = geteuid() == 0 ? "run-as nobody\n" : "";
      for (const std::string& p : programs) policy += "program " + p + "\n";
      const std::string path = (dir_ / (name + "-commands")).string();
      std::ofstream(path) << policy;
      fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
      argv.insert(argv.end(), {"--command-policy", path});
    }
    agents_[name] = std::make_unique<ChildProcess>(
        argv, (dir_ / (name + ".log")).string());
  }

  // `tessera submit` of `spec`; the study id.
  int64_t Submit(const std::string& spec) {
    const std::string path = (dir_ / "study.json").string();
    std::ofstream(path) << spec;
    std::string out;
    const int status =
        RunToEnd({TESSERA_CLI_BIN, "submit", path, "--planner", address_},
                 (dir_ / "cli.log").string(), absl::Seconds(60), &out);
    EXPECT_EQ(status, 0) << ReadFile((dir_ / "cli.log").string());
    int64_t id = 0;
    EXPECT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(out), &id)) << out;
    return id;
  }

  grpc::Status GetStudy(int64_t id, v1::GetStudyResponse* out) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(5));
    v1::GetStudyRequest r;
    r.set_study_id(id);
    return planner_stub_->GetStudy(&ctx, r, out);
  }

  std::vector<v1::Trial> Trials(int64_t study_id) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(5));
    v1::ListTrialsRequest r;
    r.set_study_id(study_id);
    r.set_sort("id");
    v1::ListTrialsResponse out;
    if (!planner_stub_->ListTrials(&ctx, r, &out).ok()) return {};
    return {out.trials().begin(), out.trials().end()};
  }

  // The study's recommendation (the status says whether there is one).
  grpc::Status GetRecommendation(int64_t id, v1::Recommendation* out) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(5));
    v1::GetRecommendationRequest r;
    r.set_study_id(id);
    return planner_stub_->GetRecommendation(&ctx, r, out);
  }

  // Waits until study `id` is in `state`, or has ended in another state
  // (then false at once).
  bool WaitState(int64_t id, v1::StudyState state, absl::Duration timeout) {
    v1::StudyState now = v1::STUDY_STATE_UNSPECIFIED;
    const bool ended = WaitFor(timeout, [&] {
      v1::GetStudyResponse s;
      if (!GetStudy(id, &s).ok()) return false;
      now = s.study().state();
      return now == state || now == v1::STUDY_DONE || now == v1::STUDY_FAILED ||
             now == v1::STUDY_CANCELLED;
    });
    return ended && now == state;
  }

  bool WaitDone(int64_t id, absl::Duration timeout) {
    return WaitState(id, v1::STUDY_DONE, timeout);
  }

  std::string Logs() {
    std::string all;
    std::vector<std::string> files = {"planner.out", "cli.log"};
    for (const auto& [name, agent] : agents_) files.push_back(name + ".log");
    for (const std::string& f : files) {
      all += absl::StrCat("--- ", f, "\n", ReadFile((dir_ / f).string()));
    }
    return all;
  }

  fs::path dir_;
  std::string db_;
  std::string address_;
  std::unique_ptr<ChildProcess> planner_;
  std::map<std::string, std::unique_ptr<ChildProcess>> agents_;
  std::unique_ptr<v1::PlannerService::Stub> planner_stub_;
  std::unique_ptr<v1::AgentService::Stub> agent_stub_;
};

}  // namespace tessera::e2e
