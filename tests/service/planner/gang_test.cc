// Gang scheduling and the rendezvous relay with two scripted agents for a
// two-node study.
#include <thread>

#include "gtest/gtest.h"
#include "tests/service/planner/test_harness.h"

namespace tessera::service::testing {
namespace {

int64_t Submit(TestServer& s, const v1::StudySpec& spec) {
  v1::SubmitStudyRequest r;
  *r.mutable_spec() = spec;
  v1::SubmitStudyResponse out;
  const grpc::Status st = s.planner->SubmitStudy(Context().get(), r, &out);
  EXPECT_TRUE(st.ok()) << st.error_message();
  return out.study_id();
}

// Two nodes of one rank each: every trial needs both agents.
v1::StudySpec TwoNodeSpec() {
  v1::StudySpec spec = TinySpec(2, 1);
  spec.mutable_trials()->set_max_trials(1);
  return spec;
}

class GangTest : public ::testing::Test {
 protected:
  void SetUp() override {
    s_ = StartServer(TestOptions(dir_.File("t.db"), clock_));
    a_ = std::make_unique<ScriptedAgent>(s_, "agent-a", "cpu", 1);
    b_ = std::make_unique<ScriptedAgent>(s_, "agent-b", "cpu", 1);
    ASSERT_TRUE(a_->Register().ok());
    ASSERT_TRUE(b_->Register().ok());
    study_ = Submit(s_, TwoNodeSpec());
    const std::vector<v1::Trial> trials = ListTrials(s_, study_);
    ASSERT_EQ(trials.size(), 1u);
    trial_ = trials[0];
    ASSERT_EQ(trial_.gang_size(), 2);
  }

  TempDir dir_;
  ManualClock clock_;
  TestServer s_;
  std::unique_ptr<ScriptedAgent> a_, b_;
  int64_t study_ = 0;
  v1::Trial trial_;
};

TEST_F(GangTest, LeasesToTheWholeGangAtOnceWithNodeRanks) {
  // One agent alone waits: nothing is leased.
  EXPECT_FALSE(a_->Lease().has_value());
  EXPECT_EQ(ListTrials(s_, study_)[0].state(), v1::TRIAL_QUEUED);
  // The second forms the gang: both hold the lease, node ranks by agent id.
  std::optional<v1::TrialAssignment> b = b_->Lease();
  ASSERT_TRUE(b.has_value());
  const v1::Trial leased = ListTrials(s_, study_)[0];
  EXPECT_EQ(leased.state(), v1::TRIAL_LEASED);
  ASSERT_EQ(leased.agents_size(), 2);
  EXPECT_EQ(leased.agents(0), "agent-a");
  EXPECT_EQ(leased.agents(1), "agent-b");
  // The first gets the same trial at its next poll.
  std::optional<v1::TrialAssignment> a = a_->Lease();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->trial_id(), trial_.id());
  EXPECT_EQ(b->trial_id(), trial_.id());
  EXPECT_EQ(a->node_rank(), 0);
  EXPECT_EQ(b->node_rank(), 1);
  for (const v1::TrialAssignment* x : {&*a, &*b}) {
    EXPECT_EQ(x->gang_size(), 2);
    EXPECT_EQ(x->world_size(), 2);
    EXPECT_EQ(x->ranks_per_node(), 1);
  }
  // Nothing more to lease.
  EXPECT_FALSE(a_->Lease().has_value());
}

TEST_F(GangTest, AnAgentThatStoppedPollingIsNotInTheGang) {
  EXPECT_FALSE(a_->Lease().has_value());
  clock_.Advance(absl::Seconds(1));  // a's poll is now stale
  EXPECT_FALSE(b_->Lease().has_value());
  EXPECT_EQ(ListTrials(s_, study_)[0].state(), v1::TRIAL_QUEUED);
  // a polls again while b's poll is recent: a (rank 0) gets it now.
  std::optional<v1::TrialAssignment> a = a_->Lease();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->node_rank(), 0);
  std::optional<v1::TrialAssignment> b = b_->Lease();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->node_rank(), 1);
}

TEST_F(GangTest, RendezvousRelaysRankZerosDataToTheGang) {
  EXPECT_FALSE(a_->Lease().has_value());
  ASSERT_TRUE(b_->Lease().has_value());
  ASSERT_TRUE(a_->Lease().has_value());
  const int64_t id = trial_.id();

  // b waits for the data; a publishes it.
  std::string fetched;
  grpc::Status fetch_status;
  std::thread waiter(
      [&] { fetch_status = b_->Fetch(id, /*wait_ms=*/5000, &fetched); });
  absl::SleepFor(absl::Milliseconds(100));
  ASSERT_TRUE(a_->Publish(id, "127.0.0.1:29500").ok());
  waiter.join();
  ASSERT_TRUE(fetch_status.ok()) << fetch_status.error_message();
  EXPECT_EQ(fetched, "127.0.0.1:29500");
  // Later fetches get it at once, rank 0 included.
  std::string again;
  ASSERT_TRUE(a_->Fetch(id, 0, &again).ok());
  EXPECT_EQ(again, "127.0.0.1:29500");

  // Only node rank 0 publishes.
  EXPECT_EQ(b_->Publish(id, "x").error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  // An agent outside the gang may neither publish, fetch nor report.
  ScriptedAgent c(s_, "agent-c", "cpu", 1);
  ASSERT_TRUE(c.Register().ok());
  EXPECT_EQ(c.Publish(id, "x").error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(c.Fetch(id, 0, nullptr).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  v1::TrialAssignment fake;
  fake.set_world_size(2);
  fake.set_global_batch(8);
  fake.set_seq_len(128);
  fake.set_steps(2);
  *fake.mutable_layout() = trial_.layout();
  const grpc::Status foreign = c.Report(id, OkResultJson(fake, 0.3));
  EXPECT_EQ(foreign.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << foreign.error_message();
  // Unknown trials.
  EXPECT_EQ(a_->Publish(987654, "x").error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(a_->Report(987654, OkResultJson(fake, 0.3)).error_code(),
            grpc::StatusCode::NOT_FOUND);
  // Nothing was written by the refused calls.
  EXPECT_EQ(ListTrials(s_, study_)[0].state(), v1::TRIAL_LEASED);

  // Rank 0 reports for the gang; the other's report is a repeat.
  ASSERT_TRUE(a_->Report(id, OkResultJson(fake, 0.3)).ok());
  EXPECT_EQ(b_->Report(id, OkResultJson(fake, 0.3)).error_code(),
            grpc::StatusCode::ALREADY_EXISTS);
  const v1::Trial done = ListTrials(s_, study_)[0];
  EXPECT_EQ(done.state(), v1::TRIAL_OK);
  // The rendezvous data went with the trial.
  EXPECT_FALSE(s_.core().studies().events().hub().HasSubscribers(study_));
  EXPECT_EQ(a_->Fetch(id, 0, nullptr).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(GangTest, AFetchWithNothingPublishedRunsOutOfTime) {
  EXPECT_FALSE(a_->Lease().has_value());
  ASSERT_TRUE(b_->Lease().has_value());
  const absl::Time start = absl::Now();
  const grpc::Status s = b_->Fetch(trial_.id(), /*wait_ms=*/200, nullptr);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(190));
}

// A planner killed while a gang met through its rendezvous board (kept in
// memory): the member that had not met its peer reconnects to the new
// planner without the trial. The gang cannot go on; it runs again, but the
// planner's restart is not the trial's failure: no attempt is counted (the
// 2,000-agent restart bench lost one attempt each of 2-15 gangs).
TEST(GangRestartTest, AGangCutOffByThePlannersRestartRunsAgainWithNoAttempt) {
  TempDir dir;
  ManualClock clock;
  const PlannerOptions options = TestOptions(dir.File("t.db"), clock);
  int64_t study = 0;
  int64_t id = 0;
  {
    TestServer s = StartServer(options);
    ScriptedAgent a(s, "agent-a", "cpu", 1);
    ScriptedAgent b(s, "agent-b", "cpu", 1);
    ASSERT_TRUE(a.Register().ok());
    ASSERT_TRUE(b.Register().ok());
    study = Submit(s, TwoNodeSpec());
    ASSERT_FALSE(a.Lease().has_value());  // waits for the gang
    ASSERT_TRUE(b.Lease().has_value());
    std::optional<v1::TrialAssignment> leased = a.Lease();
    ASSERT_TRUE(leased.has_value());
    id = leased->trial_id();
  }
  clock.Advance(absl::Seconds(6));  // past GangMemberSilence (5 s here)
  TestServer s = StartServer(options);
  ScriptedAgent a(s, "agent-a", "cpu", 1);
  ScriptedAgent b(s, "agent-b", "cpu", 1);
  ASSERT_TRUE(a.Heartbeat({id}).ok());  // rank 0 published and runs
  ASSERT_TRUE(b.Register().ok());       // rank 1 never met it
  ASSERT_TRUE(b.Heartbeat({}).ok());
  s.core().studies().WaitForAdvances();
  const v1::Trial t = ListTrials(s, study)[0];
  EXPECT_EQ(t.state(), v1::TRIAL_QUEUED);
  EXPECT_EQ(t.attempts(), 0);
  EXPECT_NE(t.reason().find("reconnected after the planner's restart"),
            std::string::npos)
      << t.reason();
  v1::HeartbeatResponse told;
  ASSERT_TRUE(a.Heartbeat({id}, &told).ok());
  ASSERT_EQ(told.cancel_trials_size(), 1);  // rank 0 stops
  EXPECT_EQ(told.cancel_trials(0), id);
}

}  // namespace
}  // namespace tessera::service::testing

namespace tessera::service::testing {
namespace {

// The review: a lost gang member was stored as the layout's crash (the
// others' processes crash without it, and their report came first). The
// planner now ends the gang's lease as an infrastructure failure (run
// again, an attempt counted) when a member goes silent for
// GangMemberSilence (5 s here) or, having restarted, no longer runs it; the
// members still there are told to stop by their next heartbeat.
TEST_F(GangTest, ASilentMemberEndsTheGangsLeaseAsAnInfrastructureFailure) {
  ASSERT_FALSE(a_->Lease().has_value());  // waits for the gang
  ASSERT_TRUE(b_->Lease().has_value());
  ASSERT_TRUE(a_->Lease().has_value());
  const int64_t id = trial_.id();
  for (int i = 0; i < 2; ++i) {  // a runs it; b says nothing
    clock_.Advance(absl::Seconds(2));
    ASSERT_TRUE(a_->Heartbeat({id}).ok());
    s_.Reap();
    EXPECT_EQ(ListTrials(s_, study_)[0].state(), v1::TRIAL_LEASED);
  }
  clock_.Advance(absl::Seconds(2));  // b silent for 6 s
  ASSERT_TRUE(a_->Heartbeat({id}).ok());
  s_.Reap();
  const v1::Trial t = ListTrials(s_, study_)[0];
  EXPECT_EQ(t.state(), v1::TRIAL_QUEUED);
  EXPECT_EQ(t.attempts(), 1);
  EXPECT_NE(t.reason().find("gang member agent-b sent no heartbeat for 6s"),
            std::string::npos)
      << t.reason();
  v1::HeartbeatResponse told;
  ASSERT_TRUE(a_->Heartbeat({id}, &told).ok());
  ASSERT_EQ(told.cancel_trials_size(), 1);
  EXPECT_EQ(told.cancel_trials(0), id);
}

TEST_F(GangTest, AMemberThatRestartedEndsTheGangsLease) {
  ASSERT_FALSE(a_->Lease().has_value());  // waits for the gang
  ASSERT_TRUE(b_->Lease().has_value());
  ASSERT_TRUE(a_->Lease().has_value());
  const int64_t id = trial_.id();
  // Just leased, b has not started it yet: nothing ends.
  ASSERT_TRUE(b_->Heartbeat({}).ok());
  EXPECT_EQ(ListTrials(s_, study_)[0].state(), v1::TRIAL_LEASED);
  clock_.Advance(absl::Seconds(3));
  ASSERT_TRUE(a_->Heartbeat({id}).ok());
  ASSERT_TRUE(b_->Heartbeat({id}).ok());
  clock_.Advance(absl::Seconds(3));
  ASSERT_TRUE(a_->Heartbeat({id}).ok());
  // b restarted: it registers again and heartbeats without the trial.
  ASSERT_TRUE(b_->Register().ok());
  ASSERT_TRUE(b_->Heartbeat({}).ok());
  s_.core().studies().WaitForAdvances();
  const v1::Trial t = ListTrials(s_, study_)[0];
  EXPECT_EQ(t.state(), v1::TRIAL_QUEUED);
  EXPECT_NE(t.reason().find("gang member agent-b no longer runs it"),
            std::string::npos)
      << t.reason();
  EXPECT_EQ(t.attempts(), 1);  // the agent's restart, under this planner
}

}  // namespace
}  // namespace tessera::service::testing
