// Leases over time (the test drives the clock and the reaper): expiry,
// heartbeats that extend, agents that go silent, hand-backs, cancellation.
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/service/planner/test_harness.h"

namespace tessera::service::testing {
namespace {

class LeaseTest : public ::testing::Test {
 protected:
  void Start(absl::Duration lease_timeout = absl::Seconds(3)) {
    PlannerOptions o = TestOptions(dir_.File("t.db"), clock_);
    o.lease_timeout = lease_timeout;  // agent_timeout: 10 s
    s_ = StartServer(o);
    agent_ = std::make_unique<ScriptedAgent>(s_, "cpu-a");
    ASSERT_TRUE(agent_->Register().ok());
    v1::SubmitStudyRequest r;
    *r.mutable_spec() = TinySpec(1, 2);
    r.mutable_spec()->mutable_trials()->set_max_trials(1);
    v1::SubmitStudyResponse out;
    ASSERT_TRUE(s_.planner->SubmitStudy(Context().get(), r, &out).ok());
    study_ = out.study_id();
  }

  v1::StudySummary Cancel() {
    v1::CancelStudyRequest cr;
    cr.set_study_id(study_);
    v1::CancelStudyResponse cancelled;
    EXPECT_TRUE(s_.planner->CancelStudy(Context().get(), cr, &cancelled).ok());
    return cancelled.study();
  }

  v1::Trial Only() {
    const std::vector<v1::Trial> trials = ListTrials(s_, study_);
    EXPECT_EQ(trials.size(), 1u);
    return trials.empty() ? v1::Trial() : trials[0];
  }

  TempDir dir_;
  ManualClock clock_;
  TestServer s_;
  std::unique_ptr<ScriptedAgent> agent_;
  int64_t study_ = 0;
};

TEST_F(LeaseTest, AnExpiredLeaseIsRequeuedAndItsHolderToldToStop) {
  Start();
  std::optional<v1::TrialAssignment> a = agent_->Lease();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->lease_expiry_unix_ms(),
            absl::ToUnixMillis(clock_.Now() + absl::Seconds(3)));
  clock_.Advance(absl::Seconds(2));
  s_.Reap();
  EXPECT_EQ(Only().state(), v1::TRIAL_LEASED);  // not yet
  clock_.Advance(absl::Seconds(2));
  s_.Reap();
  const v1::Trial requeued = Only();
  EXPECT_EQ(requeued.state(), v1::TRIAL_QUEUED);
  EXPECT_EQ(requeued.attempts(), 1);
  // The agent still thinks it runs it: the heartbeat tells it to stop.
  v1::HeartbeatResponse hb;
  ASSERT_TRUE(agent_->Heartbeat({a->trial_id()}, &hb).ok());
  ASSERT_EQ(hb.cancel_trials_size(), 1);
  EXPECT_EQ(hb.cancel_trials(0), a->trial_id());
  // It runs again (and completes); the old holder's late report of a trial
  // leased again is refused, naming the new lease (issue 28: a late report
  // of a trial NOT leased again is taken, LateReportTest below).
  ScriptedAgent other(s_, "cpu-b");
  ASSERT_TRUE(other.Register().ok());
  std::optional<v1::TrialAssignment> again = other.Lease();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->trial_id(), a->trial_id());
  const grpc::Status late = agent_->Report(a->trial_id(), OkResultJson(*a, 0.3));
  EXPECT_EQ(late.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(late.error_message().find("held by cpu-b"), std::string::npos)
      << late.error_message();
  ASSERT_TRUE(other.Report(again->trial_id(), OkResultJson(*again, 0.3)).ok());
  EXPECT_EQ(GetStudy(s_, study_).study().state(), v1::STUDY_DONE);
}

// Issue 28: a finished result reported after its lease expired (the agent
// was away longer than the lease) is taken while nothing ran the trial
// since, and the lost lease's attempt is given back; once the trial is
// leased to another agent, the old holder's report is refused naming it.
TEST_F(LeaseTest, ALateReportOfATrialNotLeasedAgainIsTaken) {
  Start();
  std::optional<v1::TrialAssignment> a = agent_->Lease();
  ASSERT_TRUE(a.has_value());
  clock_.Advance(absl::Seconds(4));
  s_.Reap();
  ASSERT_EQ(Only().state(), v1::TRIAL_QUEUED);
  ASSERT_EQ(Only().attempts(), 1);
  const grpc::Status late = agent_->Report(a->trial_id(), OkResultJson(*a, 0.3));
  EXPECT_TRUE(late.ok()) << late.error_message();
  EXPECT_EQ(Only().state(), v1::TRIAL_OK);
  EXPECT_EQ(Only().attempts(), 0);
  EXPECT_EQ(GetStudy(s_, study_).study().state(), v1::STUDY_DONE);
}

TEST_F(LeaseTest, HeartbeatsExtendTheLeasesOfRunningTrials) {
  Start();
  std::optional<v1::TrialAssignment> a = agent_->Lease();
  ASSERT_TRUE(a.has_value());
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(absl::Seconds(2));
    v1::HeartbeatResponse hb;
    ASSERT_TRUE(agent_->Heartbeat({a->trial_id()}, &hb).ok());
    EXPECT_EQ(hb.cancel_trials_size(), 0);
    s_.Reap();
  }
  EXPECT_EQ(Only().state(), v1::TRIAL_LEASED);
  // A heartbeat that does not name the trial does not extend it.
  clock_.Advance(absl::Seconds(2));
  ASSERT_TRUE(agent_->Heartbeat({}).ok());
  clock_.Advance(absl::Seconds(2));
  s_.Reap();
  EXPECT_EQ(Only().state(), v1::TRIAL_QUEUED);
}

TEST_F(LeaseTest, ASilentAgentIsMarkedGoneAndItsTrialRequeued) {
  Start(/*lease_timeout=*/absl::Seconds(60));
  std::optional<v1::TrialAssignment> a = agent_->Lease();
  ASSERT_TRUE(a.has_value());
  clock_.Advance(absl::Seconds(9));
  s_.Reap();
  EXPECT_EQ(Only().state(), v1::TRIAL_LEASED);
  clock_.Advance(absl::Seconds(2));  // 11 s > the agent timeout of 10 s
  s_.Reap();
  const v1::Trial t = Only();
  EXPECT_EQ(t.state(), v1::TRIAL_QUEUED);
  EXPECT_EQ(t.attempts(), 1);
  EXPECT_NE(t.reason().find("cpu-a"), std::string::npos) << t.reason();
  // A gone agent must register again before it heartbeats or leases.
  EXPECT_EQ(agent_->Heartbeat({}).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  v1::LeaseTrialRequest lr;
  lr.set_agent_id("cpu-a");
  v1::LeaseTrialResponse out;
  auto stub = v1::AgentService::NewStub(s_.channel);
  EXPECT_EQ(stub->LeaseTrial(Context().get(), lr, &out).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  ASSERT_TRUE(agent_->Register().ok());
  std::optional<v1::TrialAssignment> again = agent_->Lease();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->trial_id(), a->trial_id());
}

TEST_F(LeaseTest, AHandedBackTrialIsRequeuedWithoutAnAttempt) {
  Start();
  std::optional<v1::TrialAssignment> a = agent_->Lease();
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(agent_->Release(a->trial_id(), "SIGTERM").ok());
  const v1::Trial t = Only();
  EXPECT_EQ(t.state(), v1::TRIAL_QUEUED);
  EXPECT_EQ(t.attempts(), 0);
  EXPECT_NE(t.reason().find("SIGTERM"), std::string::npos) << t.reason();
  // A second hand-back of a lease it no longer holds is refused.
  EXPECT_EQ(agent_->Release(a->trial_id(), "again").error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(agent_->Lease().has_value());
}

// An idle poll that found the queue empty is remembered (an idle fleet
// polls thousands of times a second), but only until a trial is queued: a
// trial handed back is leased by the very next poll, at the same instant
// (the test's clock stands still).
TEST_F(LeaseTest, APollRightAfterATrialIsQueuedAgainGetsIt) {
  Start();
  std::optional<v1::TrialAssignment> a = agent_->Lease();
  ASSERT_TRUE(a.has_value());
  ScriptedAgent other(s_, "cpu-b");
  ASSERT_TRUE(other.Register().ok());
  EXPECT_FALSE(other.Lease().has_value());  // the only trial is running
  EXPECT_FALSE(other.Lease().has_value());
  ASSERT_TRUE(agent_->Release(a->trial_id(), "SIGTERM").ok());
  std::optional<v1::TrialAssignment> again = other.Lease();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->trial_id(), a->trial_id());
}

TEST_F(LeaseTest, AnInfrastructureFailureRunsTheTrialAgainBounded) {
  // A trial process killed from outside (the OOM killer, an operator) is
  // not the layout's crash: queued again with an attempt counted and the
  // reason kept, until the attempts run out.
  Start();
  const std::string why =
      "tessera-trial rank 1 (local rank 1) killed by signal 9 (Killed)";
  for (int attempt = 1; attempt <= 3; ++attempt) {
    std::optional<v1::TrialAssignment> a = agent_->Lease();
    ASSERT_TRUE(a.has_value()) << attempt;
    ASSERT_TRUE(agent_->Release(a->trial_id(), why, true).ok());
    const v1::Trial t = Only();
    EXPECT_EQ(t.attempts(), attempt);
    EXPECT_NE(t.reason().find("infrastructure failure on agent cpu-a: " + why),
              std::string::npos)
        << t.reason();
    EXPECT_EQ(t.state(), attempt < 3 ? v1::TRIAL_QUEUED : v1::TRIAL_CRASH)
        << attempt;
  }
  EXPECT_NE(Only().reason().find("gave up after 3"), std::string::npos)
      << Only().reason();
}

TEST_F(LeaseTest, CancellingTheStudyStopsItsRunningTrials) {
  Start();
  std::optional<v1::TrialAssignment> a = agent_->Lease();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(Cancel().state(), v1::STUDY_CANCELLED);
  v1::HeartbeatResponse hb;
  ASSERT_TRUE(agent_->Heartbeat({a->trial_id()}, &hb).ok());
  ASSERT_EQ(hb.cancel_trials_size(), 1);
  EXPECT_EQ(hb.cancel_trials(0), a->trial_id());
  // Handing it back now cancels it for good; nothing is leased again.
  ASSERT_TRUE(agent_->Release(a->trial_id(), "cancelled").ok());
  EXPECT_EQ(Only().state(), v1::TRIAL_CANCELLED);
  EXPECT_FALSE(agent_->Lease().has_value());
  // Cancelling again is harmless.
  EXPECT_EQ(Cancel().state(), v1::STUDY_CANCELLED);
}

// A trial handed back as an infrastructure failure after its study ended
// would be queued again (an attempt counted) with nothing left to run it:
// the study hears of it and cancels it, as the reaper's re-queues are.
TEST_F(LeaseTest, AnInfrastructureFailureAfterTheStudyEndedQueuesNothing) {
  Start();
  std::optional<v1::TrialAssignment> a = agent_->Lease();
  ASSERT_TRUE(a.has_value());
  ASSERT_EQ(Cancel().state(), v1::STUDY_CANCELLED);
  ASSERT_TRUE(agent_
                  ->Release(a->trial_id(), "the node lost its GPU",
                            /*infrastructure_failure=*/true)
                  .ok());
  EXPECT_EQ(Only().state(), v1::TRIAL_CANCELLED) << Only().reason();
  EXPECT_FALSE(agent_->Lease().has_value());
}

// Agents that poll at the same moment each get a trial of their own while
// enough are queued: a poll passes over the trials other leases are writing
// (it reads those and one more, leases.cc DecideLease), never stopping short
// of a free one, and no trial goes to two agents.
TEST(ConcurrentLeaseTest, AgentsPollingTogetherEachGetTheirOwnTrial) {
  TempDir dir;
  ManualClock clock;
  TestServer s = StartServer(TestOptions(dir.File("t.db"), clock));
  constexpr int kAgents = 12;
  std::vector<std::unique_ptr<ScriptedAgent>> agents;
  for (int i = 0; i < kAgents; ++i) {
    agents.push_back(
        std::make_unique<ScriptedAgent>(s, absl::StrCat("cpu-", i)));
    ASSERT_TRUE(agents.back()->Register().ok());
  }
  v1::SubmitStudyRequest r;
  *r.mutable_spec() = TinySpec(1, 2);
  r.mutable_spec()->mutable_trials()->set_max_trials(2 * kAgents);
  r.mutable_spec()->mutable_trials()->set_first_rung(2 * kAgents);
  v1::SubmitStudyResponse out;
  ASSERT_TRUE(s.planner->SubmitStudy(Context().get(), r, &out).ok());
  s.core().studies().WaitForAdvances();
  int64_t queued = 0;
  for (const v1::Trial& t : ListTrials(s, out.study_id())) {
    if (t.state() == v1::TRIAL_QUEUED) ++queued;
  }
  ASSERT_GE(queued, kAgents) << "the tiny study queued too few trials";

  std::vector<std::optional<v1::TrialAssignment>> got(kAgents);
  std::vector<std::thread> polls;
  for (int i = 0; i < kAgents; ++i) {
    polls.emplace_back([&, i] { got[i] = agents[i]->Lease(); });
  }
  for (std::thread& t : polls) t.join();
  std::set<int64_t> trials;
  for (int i = 0; i < kAgents; ++i) {
    ASSERT_TRUE(got[i].has_value()) << agents[i]->id() << " got no trial";
    trials.insert(got[i]->trial_id());
  }
  EXPECT_EQ(trials.size(), static_cast<size_t>(kAgents));
}

}  // namespace
}  // namespace tessera::service::testing
