#include "agents/trial_execution.h"

#include <signal.h>

#include <atomic>
#include <thread>

#include "agents/files.h"
#include "core/trial_result.h"
#include "gtest/gtest.h"
#include "tests/agents/fake_planner.h"

namespace tessera::agents {
namespace {

using testing::FakePlanner;

class TrialExecutionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> dir =
        MakeUniqueDirectory(::testing::TempDir(), "execution-");
    ASSERT_TRUE(dir.ok());
    root_ = *dir;
    options_.agent_id = "a";
    options_.trial_binary = TESSERA_TRIAL_BINARY;
    options_.work_root = root_ + "/a";
  }
  void TearDown() override { (void)RemoveTree(root_); }

  // A tiny trial on `ranks` ranks of one agent.
  static v1::TrialAssignment Tiny(int64_t ranks) {
    v1::TrialAssignment a;
    a.set_trial_id(5);
    a.mutable_model()->set_preset("tiny");
    a.mutable_layout()->set_tp(ranks);
    a.set_global_batch(4);
    a.set_seq_len(32);
    a.set_warmup_steps(1);
    a.set_steps(2);
    a.set_backend("cpu");
    a.set_world_size(ranks);
    a.set_gang_size(1);
    a.set_ranks_per_node(ranks);
    a.set_time_limit_s(120);
    a.set_seed(7);
    return a;
  }

  static TrialResult Parse(const TrialOutcome& outcome) {
    nlohmann::json json =
        nlohmann::json::parse(outcome.result_json, nullptr, false);
    EXPECT_FALSE(json.is_discarded()) << outcome.result_json;
    absl::StatusOr<TrialResult> r = TrialResultFromJson(json);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : TrialResult{};
  }

  std::string root_;
  TrialExecutionOptions options_;
};

TEST_F(TrialExecutionTest, ThreadsModeRunsTheRealTrial) {
  TrialOutcome outcome =
      RunTrialAssignment(AssignedTrialOf(Tiny(2)), options_, nullptr);
  ASSERT_EQ(outcome.end, TrialEnd::kResult);
  const TrialResult r = Parse(outcome);
  EXPECT_EQ(r.status, TrialStatus::kOk) << r.reason;
  EXPECT_TRUE(outcome.ok);
  EXPECT_EQ(r.ranks, 2);
  EXPECT_EQ(r.steps, 2);
  EXPECT_GT(r.tokens_per_s, 0);
  EXPECT_EQ(outcome.summary.rfind("ok ", 0), 0u) << outcome.summary;
  // One process, its files in the trial's folder.
  EXPECT_TRUE(ReadFile(outcome.work_dir + "/trial.json").ok());
  EXPECT_FALSE(ReadFile(outcome.work_dir + "/rank-0.json").ok());
}

// Two agents of one gang, each one process, meeting through the relay.
TEST_F(TrialExecutionTest, TwoProcessesAcrossAgentsThroughTheRelay) {
  FakePlanner planner;
  planner.Hold(5, {"a", "b"});
  std::unique_ptr<PlannerClient> client =
      PlannerClient::Connect(planner.address(), {});
  TrialOutcome outcomes[2];
  std::thread nodes[2];
  for (int node = 0; node < 2; ++node) {
    nodes[node] = std::thread([&, node] {
      v1::TrialAssignment a = Tiny(2);
      a.set_gang_size(2);
      a.set_node_rank(node);
      a.set_ranks_per_node(1);
      TrialExecutionOptions o = options_;
      o.agent_id = node == 0 ? "a" : "b";
      o.work_root = root_ + "/" + o.agent_id;
      o.planner = client.get();
      outcomes[node] = RunTrialAssignment(AssignedTrialOf(a), o, nullptr);
    });
  }
  for (std::thread& t : nodes) t.join();
  TrialResult r[2];
  for (int node = 0; node < 2; ++node) {
    ASSERT_EQ(outcomes[node].end, TrialEnd::kResult);
    r[node] = Parse(outcomes[node]);
    EXPECT_EQ(r[node].status, TrialStatus::kOk) << r[node].reason;
    EXPECT_EQ(r[node].ranks, 2);
  }
  // One process per rank, each in its own agent's folder.
  EXPECT_TRUE(ReadFile(outcomes[0].work_dir + "/rank-0.json").ok());
  EXPECT_TRUE(ReadFile(outcomes[1].work_dir + "/rank-1.json").ok());
  // The relayed file was written on node 1's side.
  EXPECT_TRUE(ReadFile(outcomes[1].work_dir + "/rendezvous").ok());
  // Both ranks trained the same model: the same losses.
  EXPECT_EQ(r[0].loss, r[1].loss);
}

TEST_F(TrialExecutionTest, RelayRefusedMeansTheLeaseIsGone) {
  FakePlanner planner;  // holds nothing: every rendezvous is refused
  std::unique_ptr<PlannerClient> client =
      PlannerClient::Connect(planner.address(), {});
  v1::TrialAssignment a = Tiny(2);
  a.set_gang_size(2);
  a.set_node_rank(1);
  a.set_ranks_per_node(1);
  options_.planner = client.get();
  const absl::Time start = absl::Now();
  TrialOutcome outcome =
      RunTrialAssignment(AssignedTrialOf(a), options_, nullptr);
  EXPECT_EQ(outcome.end, TrialEnd::kLeaseGone) << outcome.summary;
  EXPECT_EQ(outcome.result_json, "");
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

TEST_F(TrialExecutionTest, AnAssignmentThatCannotRunIsInvalid) {
  v1::TrialAssignment a = Tiny(2);
  a.set_world_size(3);
  TrialOutcome outcome =
      RunTrialAssignment(AssignedTrialOf(a), options_, nullptr);
  ASSERT_EQ(outcome.end, TrialEnd::kResult);
  const TrialResult r = Parse(outcome);
  EXPECT_EQ(r.status, TrialStatus::kInvalid);
  EXPECT_EQ(r.reason.rfind("assignment.world_size: ", 0), 0u) << r.reason;
  EXPECT_EQ(r.model, "tiny");
}

TEST_F(TrialExecutionTest, AMissingBinaryIsACrash) {
  options_.trial_binary = root_ + "/no-tessera-trial";
  TrialOutcome outcome =
      RunTrialAssignment(AssignedTrialOf(Tiny(2)), options_, nullptr);
  ASSERT_EQ(outcome.end, TrialEnd::kResult);
  const TrialResult r = Parse(outcome);
  EXPECT_EQ(r.status, TrialStatus::kCrash);
  EXPECT_NE(r.reason.find("no-tessera-trial"), std::string::npos) << r.reason;
}

TEST_F(TrialExecutionTest, StopKillsALongTrial) {
  v1::TrialAssignment a = Tiny(2);
  a.set_steps(1000000);
  std::atomic<bool> stop{false};
  std::thread stopper([&] {
    absl::SleepFor(absl::Milliseconds(500));
    stop = true;
  });
  const absl::Time start = absl::Now();
  TrialOutcome outcome = RunTrialAssignment(AssignedTrialOf(a), options_,
                                            [&] { return stop.load(); });
  stopper.join();
  EXPECT_EQ(outcome.end, TrialEnd::kStopped);
  EXPECT_EQ(outcome.result_json, "");
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

TEST_F(TrialExecutionTest, AKillFromOutsideIsAnInfrastructureFailure) {
  // The OOM killer or an operator SIGKILLs a rank: not the layout's crash,
  // so the agent hands the trial back to be run again (agent.cc).
  v1::TrialAssignment a = Tiny(2);
  a.set_steps(1000000);
  ProcessGroupRegistry registry;
  options_.registry = &registry;
  std::thread killer([&] {
    const absl::Time until = absl::Now() + absl::Seconds(10);
    while (registry.size() == 0 && absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    absl::SleepFor(absl::Milliseconds(300));
    registry.SignalAll(SIGKILL);
  });
  TrialOutcome outcome =
      RunTrialAssignment(AssignedTrialOf(a), options_, nullptr);
  killer.join();
  EXPECT_EQ(outcome.end, TrialEnd::kInfrastructureFailure) << outcome.summary;
  EXPECT_NE(outcome.summary.find("killed by signal 9"), std::string::npos)
      << outcome.summary;
}

TEST(AgentTimeLimitTest, BeyondTheTrialsOwnWatchdog) {
  // tessera-trial's watchdog: 1.1 T + 5 s; the agent's: 1.1 T + 10 s.
  EXPECT_NEAR(absl::ToDoubleSeconds(AgentTimeLimit(100, absl::Hours(1))), 120,
              1e-9);
  EXPECT_EQ(AgentTimeLimit(0, absl::Hours(1)), absl::Hours(1));
}

}  // namespace
}  // namespace tessera::agents
