#include "agents/agent.h"

#include <cstdio>
#include <filesystem>
#include <set>
#include <thread>

#include "agents/files.h"
#include "agents/result_spool.h"
#include "core/trial_result.h"
#include "gtest/gtest.h"
#include "tests/agents/fake_planner.h"

namespace tessera::agents {
namespace {

using testing::FakePlanner;

// An agent running against the fake planner on its own thread.
class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> dir =
        MakeUniqueDirectory(::testing::TempDir(), "agent-");
    ASSERT_TRUE(dir.ok());
    dir_ = *dir;
    options_.info.set_agent_id("node-a");
    options_.info.set_hostname("node-a");
    options_.info.set_backend("cpu");
    options_.info.set_gpu_name("test cpu");
    options_.info.set_gpu_count(2);
    options_.info.set_address("127.0.0.1");
    options_.trial_binary = TESSERA_TRIAL_BINARY;
    options_.work_dir = dir_;
    options_.kill_grace = absl::Milliseconds(500);
    client_ = PlannerClient::Connect(planner_.address(), {});
    log_ = std::make_unique<EventLog>(stderr, "node-a");
  }
  void TearDown() override {
    StopAndJoin();
    (void)RemoveTree(dir_);
  }

  void StartAgent() {
    agent_ = std::make_unique<Agent>(options_, client_.get(), log_.get());
    thread_ = std::thread([this] { run_status_ = agent_->Run(); });
  }
  // Stops the agent; how long Run() took to return.
  absl::Duration StopAndJoin() {
    if (!thread_.joinable()) return absl::ZeroDuration();
    const absl::Time start = absl::Now();
    agent_->Stop();
    thread_.join();
    EXPECT_TRUE(run_status_.ok()) << run_status_;
    return absl::Now() - start;
  }

  static v1::TrialAssignment Tiny(int64_t id, int64_t steps) {
    v1::TrialAssignment a;
    a.set_trial_id(id);
    a.set_study_id(1);
    a.mutable_model()->set_preset("tiny");
    a.mutable_layout()->set_tp(2);
    a.set_global_batch(4);
    a.set_seq_len(32);
    a.set_warmup_steps(1);
    a.set_steps(steps);
    a.set_backend("cpu");
    a.set_world_size(2);
    a.set_gang_size(1);
    a.set_ranks_per_node(2);
    a.set_time_limit_s(120);
    return a;
  }

  // Whether the last heartbeat listed `trial` as running.
  bool HeartbeatShows(int64_t trial) {
    std::vector<std::vector<int64_t>> beats = planner_.heartbeats("node-a");
    if (beats.empty()) return false;
    for (int64_t id : beats.back()) {
      if (id == trial) return true;
    }
    return false;
  }

  // The files in the agent's result spool (its default, <work_dir>/spool).
  std::set<std::string> SpoolFiles() const {
    std::set<std::string> names;
    std::error_code error;
    for (const auto& e :
         std::filesystem::directory_iterator(dir_ + "/spool", error)) {
      names.insert(e.path().filename().string());
    }
    return names;
  }

  FakePlanner planner_;
  std::unique_ptr<PlannerClient> client_;
  std::unique_ptr<EventLog> log_;
  AgentOptions options_;
  std::unique_ptr<Agent> agent_;
  std::thread thread_;
  absl::Status run_status_;
  std::string dir_;
};

TEST_F(AgentTest, RegistersProbesLeasesRunsAndReports) {
  planner_.Queue(Tiny(11, 2), {"node-a"});
  StartAgent();
  ASSERT_TRUE(
      FakePlanner::WaitFor([&] { return planner_.reports().size() == 1; }));
  const FakePlanner::Report report = planner_.reports()[0];
  EXPECT_EQ(report.agent_id, "node-a");
  EXPECT_EQ(report.trial_id, 11);
  absl::StatusOr<TrialResult> r =
      TrialResultFromJson(nlohmann::json::parse(report.result_json));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, TrialStatus::kOk) << r->reason;
  // Registered as itself, with its probes.
  std::optional<v1::AgentInfo> info = planner_.agent("node-a");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->backend(), "cpu");
  EXPECT_EQ(info->gpu_count(), 2);
  EXPECT_EQ(planner_.registrations("node-a"), 1);
  EXPECT_FALSE(planner_.probes("node-a").empty());
  ASSERT_TRUE(FakePlanner::WaitFor(
      [&] { return planner_.heartbeats("node-a").size() >= 2; }));
  EXPECT_LT(StopAndJoin(), absl::Seconds(2));
  EXPECT_EQ(agent_->trials_reported(), 1);
  EXPECT_TRUE(planner_.releases().empty());
}

TEST_F(AgentTest, ACancelledTrialIsKilledAndNotReported) {
  planner_.Queue(Tiny(12, 1000000), {"node-a"});
  StartAgent();
  ASSERT_TRUE(FakePlanner::WaitFor([&] { return HeartbeatShows(12); }));
  planner_.Cancel(12);
  // Killed within a heartbeat or two: the next heartbeats show nothing.
  ASSERT_TRUE(FakePlanner::WaitFor([&] { return !HeartbeatShows(12); },
                                   absl::Seconds(10)));
  EXPECT_TRUE(planner_.reports().empty());
  EXPECT_TRUE(planner_.releases().empty());
  EXPECT_EQ(agent_->trials_reported(), 0);
}

TEST_F(AgentTest, RegistersAgainWhenThePlannerForgetsIt) {
  StartAgent();
  ASSERT_TRUE(
      FakePlanner::WaitFor([&] { return !planner_.probes("node-a").empty(); }));
  planner_.ForgetAgents();
  ASSERT_TRUE(FakePlanner::WaitFor(
      [&] { return planner_.registrations("node-a") == 2; }));
  // And runs its probes again for the planner that lost them.
  ASSERT_TRUE(
      FakePlanner::WaitFor([&] { return !planner_.probes("node-a").empty(); }));
}

TEST_F(AgentTest, OutlastsAPlannerRestartAndRegistersAgain) {
  StartAgent();
  ASSERT_TRUE(FakePlanner::WaitFor(
      [&] { return planner_.registrations("node-a") == 1; }));
  planner_.Shutdown();
  absl::SleepFor(absl::Milliseconds(800));  // a few failed heartbeats
  planner_.Start();
  ASSERT_TRUE(FakePlanner::WaitFor(
      [&] { return planner_.registrations("node-a") >= 2; }));
  // Back to work: a trial queued now is run and reported.
  planner_.Queue(Tiny(13, 1), {"node-a"});
  ASSERT_TRUE(
      FakePlanner::WaitFor([&] { return planner_.reports().size() == 1; }));
}

TEST_F(AgentTest, AQuickRestartIsNoticedToo) {
  StartAgent();
  ASSERT_TRUE(FakePlanner::WaitFor(
      [&] { return planner_.heartbeats("node-a").size() >= 1; }));
  // Down and up between two heartbeats: no call failed, but the connection
  // broke, so the agent registers again.
  planner_.Shutdown();
  planner_.Start();
  ASSERT_TRUE(FakePlanner::WaitFor(
      [&] { return planner_.registrations("node-a") >= 2; }));
}

TEST_F(AgentTest, DrainLetsARunningTrialFinishAndReport) {
  options_.drain_timeout = absl::Seconds(60);
  planner_.Queue(Tiny(14, 3), {"node-a"});
  StartAgent();
  ASSERT_TRUE(FakePlanner::WaitFor([&] { return HeartbeatShows(14); }));
  StopAndJoin();
  ASSERT_EQ(planner_.reports().size(), 1u);
  EXPECT_EQ(planner_.reports()[0].trial_id, 14);
  EXPECT_TRUE(planner_.releases().empty());
}

TEST_F(AgentTest, PastTheDrainTimeoutTheLeaseIsHandedBack) {
  options_.drain_timeout = absl::Milliseconds(300);
  planner_.Queue(Tiny(15, 1000000), {"node-a"});
  StartAgent();
  ASSERT_TRUE(FakePlanner::WaitFor([&] { return HeartbeatShows(15); }));
  EXPECT_LT(StopAndJoin(), absl::Seconds(5));
  EXPECT_TRUE(planner_.reports().empty());
  ASSERT_EQ(planner_.releases().size(), 1u);
  EXPECT_EQ(planner_.releases()[0].trial_id(), 15);
  EXPECT_NE(planner_.releases()[0].reason().find("drain"), std::string::npos);
}

TEST_F(AgentTest, AReportRefusedForALostLeaseIsDropped) {
  // The planner hands the trial out but no longer holds it for the agent by
  // the time it reports (its lease expired): FAILED_PRECONDITION.
  planner_.Queue(Tiny(16, 1), {"node-a"});
  planner_.Revoke(16);
  planner_.Queue(Tiny(17, 1), {"node-a"});
  StartAgent();
  // Trial 16's result is dropped at once (no retry loop), and the agent
  // goes on to the next trial.
  ASSERT_TRUE(
      FakePlanner::WaitFor([&] { return planner_.reports().size() == 1; }));
  EXPECT_EQ(planner_.reports()[0].trial_id, 17);
  StopAndJoin();
  EXPECT_EQ(agent_->trials_reported(), 1);
}

TEST_F(AgentTest, AResultNotReportedWithinTheDrainIsReportedByTheNextStart) {
  // The planner cannot take reports (UNAVAILABLE) until well after the
  // agent's drain is over.
  options_.drain_timeout = absl::Milliseconds(500);
  options_.backoff.max = absl::Milliseconds(200);
  planner_.FailReports(grpc::StatusCode::UNAVAILABLE);
  planner_.Queue(Tiny(21, 1), {"node-a"});
  StartAgent();
  ASSERT_TRUE(
      FakePlanner::WaitFor([&] { return planner_.report_attempts() >= 2; }));
  // On disk before the first report.
  EXPECT_EQ(SpoolFiles(), std::set<std::string>{"trial-21.json"});
  EXPECT_LT(StopAndJoin(), absl::Seconds(5));
  EXPECT_TRUE(planner_.reports().empty());
  // Still spooled, and its lease kept for the next start, not handed back.
  EXPECT_EQ(SpoolFiles(), std::set<std::string>{"trial-21.json"});
  EXPECT_TRUE(planner_.releases().empty());
  absl::StatusOr<std::string> spooled = ReadFile(dir_ + "/spool/trial-21.json");
  ASSERT_TRUE(spooled.ok()) << spooled.status();

  // The planner is back; a new agent on the same folders reports it once
  // registered, and the spool is empty again.
  planner_.FailReports(grpc::StatusCode::OK);
  StartAgent();
  ASSERT_TRUE(
      FakePlanner::WaitFor([&] { return planner_.reports().size() == 1; }));
  const FakePlanner::Report report = planner_.reports()[0];
  EXPECT_EQ(report.trial_id, 21);
  EXPECT_EQ(report.agent_id, "node-a");
  EXPECT_EQ(report.result_json, *spooled);
  absl::StatusOr<TrialResult> r =
      TrialResultFromJson(nlohmann::json::parse(report.result_json));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, TrialStatus::kOk) << r->reason;
  ASSERT_TRUE(FakePlanner::WaitFor([&] { return SpoolFiles().empty(); }));
  StopAndJoin();
  EXPECT_EQ(agent_->trials_reported(), 1);
}

// Issue 28: a planner whose store was full answered reports with errors,
// and its heartbeats meanwhile said to stop the trial (its lease had run
// out while it could not serve); the agent dropped the finished result.
// Only a definite no drops it now: an UNAVAILABLE or RESOURCE_EXHAUSTED
// report is retried, stop or not, and taken once the planner serves again.
TEST_F(AgentTest, AResultIsKeptThroughFailedReportsAndACancelUntilTaken) {
  options_.backoff.max = absl::Milliseconds(100);
  planner_.FailReports(grpc::StatusCode::RESOURCE_EXHAUSTED);
  planner_.Queue(Tiny(24, 1), {"node-a"});
  StartAgent();
  ASSERT_TRUE(
      FakePlanner::WaitFor([&] { return planner_.report_attempts() >= 2; }));
  // What a planner back from an outage said of the trial, while it still
  // takes its late report (it was not leased again).
  planner_.Cancel(24);
  planner_.Hold(24, {"node-a"});
  planner_.FailReports(grpc::StatusCode::UNAVAILABLE);
  const int64_t attempts = planner_.report_attempts();
  ASSERT_TRUE(FakePlanner::WaitFor(
      [&] { return planner_.report_attempts() >= attempts + 3; }));
  EXPECT_EQ(SpoolFiles(), std::set<std::string>{"trial-24.json"});
  planner_.FailReports(grpc::StatusCode::OK);
  ASSERT_TRUE(
      FakePlanner::WaitFor([&] { return planner_.reports().size() == 1; }));
  EXPECT_EQ(planner_.reports()[0].trial_id, 24);
  ASSERT_TRUE(FakePlanner::WaitFor([&] { return SpoolFiles().empty(); }));
  StopAndJoin();
  EXPECT_EQ(agent_->trials_reported(), 1);
}

TEST_F(AgentTest, ARefusedResultIsRemovedFromTheSpool) {
  // Trial 22's lease is gone by the time it reports: FAILED_PRECONDITION,
  // dropped at once and not kept for a next start.
  planner_.Queue(Tiny(22, 1), {"node-a"});
  planner_.Revoke(22);
  planner_.Queue(Tiny(23, 1), {"node-a"});
  StartAgent();
  ASSERT_TRUE(
      FakePlanner::WaitFor([&] { return planner_.reports().size() == 1; }));
  EXPECT_EQ(planner_.reports()[0].trial_id, 23);
  ASSERT_TRUE(FakePlanner::WaitFor([&] { return SpoolFiles().empty(); }));
  StopAndJoin();
  EXPECT_TRUE(SpoolFiles().empty());
}

TEST_F(AgentTest, SpooledResultsAreReportedAtStartBeforeAnyLease) {
  // What an earlier run left: trial 31 still leased to this agent, trial 32
  // no longer (refused, then removed), and an unreadable entry (moved
  // aside, not fatal).
  {
    absl::StatusOr<ResultSpool> spool = ResultSpool::Open(dir_ + "/spool");
    ASSERT_TRUE(spool.ok()) << spool.status();
    ASSERT_TRUE(spool->Put(31, R"({"from":"an earlier run"})").ok());
    ASSERT_TRUE(spool->Put(32, R"({"from":"a lost lease"})").ok());
    ASSERT_TRUE(
        WriteFileAtomically(spool->dir() + "/trial-33.json", "{torn").ok());
  }
  planner_.Hold(31, {"node-a"});
  planner_.Queue(Tiny(34, 1), {"node-a"});
  StartAgent();
  ASSERT_TRUE(
      FakePlanner::WaitFor([&] { return planner_.reports().size() == 2; }));
  const std::vector<FakePlanner::Report> reports = planner_.reports();
  EXPECT_EQ(reports[0].trial_id, 31);  // before the trial leased afterwards
  EXPECT_EQ(reports[0].result_json, R"({"from":"an earlier run"})");
  EXPECT_EQ(reports[1].trial_id, 34);
  ASSERT_TRUE(FakePlanner::WaitFor([&] {
    return SpoolFiles() == std::set<std::string>{"trial-33.json.bad"};
  }));
  StopAndJoin();
  EXPECT_EQ(agent_->trials_reported(), 2);
}

}  // namespace
}  // namespace tessera::agents

namespace tessera::agents {
namespace {

// A gang trial that crashes here because another member was lost is not
// the layout's crash: the agent holds the crash back until the planner has
// had time to end the lease (it does when a member goes silent); cancelled
// meanwhile, it reports nothing. Not cancelled, the crash is reported.
TEST_F(AgentTest,
       AGangCrashIsHeldBackUntilThePlannerSaysWhetherAMemberWasLost) {
  options_.trial_binary = "/nonexistent/tessera-trial";  // crashes at once
  v1::TrialAssignment lost = Tiny(41, 1);
  lost.set_gang_size(2);
  lost.set_world_size(4);
  planner_.Queue(lost, {"node-a"});
  StartAgent();
  // It crashed and waits, still running it as far as heartbeats say.
  ASSERT_TRUE(FakePlanner::WaitFor([&] { return HeartbeatShows(41); }));
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_EQ(planner_.report_attempts(), 0);
  planner_.Cancel(41);  // the planner ended the lease: a member was lost
  ASSERT_TRUE(FakePlanner::WaitFor([&] { return !HeartbeatShows(41); }));

  v1::TrialAssignment crashed = Tiny(42, 1);
  crashed.set_gang_size(2);
  crashed.set_world_size(4);
  planner_.Queue(crashed, {"node-a"});
  ASSERT_TRUE(FakePlanner::WaitFor(
      [&] { return planner_.reports().size() == 1; }, absl::Seconds(30)));
  EXPECT_EQ(planner_.reports()[0].trial_id, 42);
  StopAndJoin();
  EXPECT_EQ(planner_.reports().size(), 1u);  // never trial 41
  EXPECT_EQ(planner_.report_attempts(), 1);  // not even tried
}

}  // namespace
}  // namespace tessera::agents
