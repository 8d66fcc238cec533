// A planner destroyed mid-study and started again on the same file resumes
// the study from the store: no result lost, none counted twice.
#include <map>

#include "gtest/gtest.h"
#include "tests/service/planner/test_harness.h"

namespace tessera::service::testing {
namespace {

TEST(RestartTest, TheStudyContinuesAndCompletesOnTheSameFile) {
  TempDir dir;
  ManualClock clock;
  const PlannerOptions options = TestOptions(dir.File("t.db"), clock);
  v1::StudySpec spec = TinySpec(1, 2);
  spec.mutable_trials()->set_max_trials(6);
  spec.mutable_trials()->set_first_rung(4);
  spec.mutable_trials()->set_stop_margin(10);
  // Layouts 2 and 3 measure within the noise of each other: confirmed.
  const double step_time_s[] = {0.4, 0.2, 0.205, 0.5};

  int64_t study = 0;
  int64_t running = 0;
  std::string running_result;
  {
    TestServer s = StartServer(options);
    ScriptedAgent agent(s, "cpu-a");
    ASSERT_TRUE(agent.Register().ok());
    v1::SubmitStudyRequest r;
    *r.mutable_spec() = spec;
    v1::SubmitStudyResponse out;
    ASSERT_TRUE(s.planner->SubmitStudy(Context().get(), r, &out).ok());
    study = out.study_id();
    for (int i = 0; i < 2; ++i) {
      std::optional<v1::TrialAssignment> a = agent.Lease();
      ASSERT_TRUE(a.has_value());
      ASSERT_TRUE(
          agent.Report(a->trial_id(), OkResultJson(*a, step_time_s[i])).ok());
    }
    // A third trial is running when the planner goes away.
    std::optional<v1::TrialAssignment> a = agent.Lease();
    ASSERT_TRUE(a.has_value());
    running = a->trial_id();
    running_result = OkResultJson(*a, step_time_s[2]);
  }

  TestServer s = StartServer(options);
  ScriptedAgent agent(s, "cpu-a");
  EXPECT_EQ(GetStudy(s, study).study().state(), v1::STUDY_RUNNING);
  EXPECT_EQ(GetStudy(s, study).study().trials_done(), 2);
  // The agent's lease survived; its report lands once.
  v1::HeartbeatResponse hb;
  ASSERT_TRUE(agent.Heartbeat({running}, &hb).ok());
  EXPECT_EQ(hb.cancel_trials_size(), 0);
  ASSERT_TRUE(agent.Report(running, running_result).ok());
  EXPECT_EQ(agent.Report(running, running_result).error_code(),
            grpc::StatusCode::ALREADY_EXISTS);
  // The rest of rung 0, then rung 1 as if nothing happened.
  std::optional<v1::TrialAssignment> a = agent.Lease();
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(
      agent.Report(a->trial_id(), OkResultJson(*a, step_time_s[3])).ok());
  for (int i = 0; i < 2; ++i) {
    a = agent.Lease();
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(a->steps(), 4);
    ASSERT_TRUE(agent.Report(a->trial_id(), OkResultJson(*a, 0.25)).ok());
  }
  EXPECT_FALSE(agent.Lease().has_value());
  const v1::GetStudyResponse done = GetStudy(s, study);
  EXPECT_EQ(done.study().state(), v1::STUDY_DONE);
  const std::vector<v1::Trial> trials = ListTrials(s, study);
  ASSERT_EQ(trials.size(), 6u);
  std::map<int64_t, int> per_rung;
  for (const v1::Trial& t : trials) {
    EXPECT_EQ(t.state(), v1::TRIAL_OK);
    ++per_rung[t.rung()];
  }
  EXPECT_EQ(per_rung[0], 4);
  EXPECT_EQ(per_rung[1], 2);
  // Every stored result counts once in the calibration.
  absl::StatusOr<db::Calibration> c =
      s.server->store().LatestCalibration(db::StudyScope(study));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->samples, 6);
}

TEST(RestartTest, TheOutageCountsAgainstNoRunningTrial) {
  // The planner is down for a minute, past the lease and agent timeouts: the
  // trial that was running keeps its lease, its agent heartbeats and
  // reports as if nothing happened (before, the first reap after the
  // restart re-queued it and marked the agent gone).
  TempDir dir;
  ManualClock clock;
  const PlannerOptions options = TestOptions(dir.File("t.db"), clock);
  int64_t running = 0;
  std::string result;
  {
    TestServer s = StartServer(options);
    ScriptedAgent agent(s, "cpu-a");
    ASSERT_TRUE(agent.Register().ok());
    v1::SubmitStudyRequest r;
    *r.mutable_spec() = TinySpec(1, 2);
    r.mutable_spec()->mutable_trials()->set_max_trials(2);
    v1::SubmitStudyResponse out;
    ASSERT_TRUE(s.planner->SubmitStudy(Context().get(), r, &out).ok());
    std::optional<v1::TrialAssignment> a = agent.Lease();
    ASSERT_TRUE(a.has_value());
    running = a->trial_id();
    result = OkResultJson(*a, 0.3);
  }
  clock.Advance(absl::Minutes(1));
  TestServer s = StartServer(options);
  s.Reap();
  ScriptedAgent agent(s, "cpu-a");
  v1::HeartbeatResponse hb;
  ASSERT_TRUE(agent.Heartbeat({running}, &hb).ok());
  EXPECT_EQ(hb.cancel_trials_size(), 0);
  ASSERT_TRUE(agent.Report(running, result).ok());
  const db::Trial t = *s.server->store().GetTrial(running);
  EXPECT_EQ(t.status, db::TrialState::kOk);
  EXPECT_EQ(t.attempts, 0);
}

// Issue 28: the planner stopped (SIGSTOP) for 20 s with trials running; on
// SIGCONT every lease expired in the same instant and the agents were told
// to kill their trials. The reaper thread now takes a pass that comes
// much later than it asked for as a stall of the process: no agent could
// renew its lease meanwhile, so every lease and agent gets a lease timeout
// from the planner's return before anything expires.
TEST(RestartTest, TheLeaseClockStandsStillWhileThePlannerIsStopped) {
  TempDir dir;
  ManualClock clock;
  PlannerOptions options = TestOptions(dir.File("t.db"), clock);
  options.reaper_period = absl::Milliseconds(20);  // the reaper thread runs
  TestServer s = StartServer(options);
  ScriptedAgent agent(s, "cpu-a");
  ASSERT_TRUE(agent.Register().ok());
  v1::SubmitStudyRequest r;
  *r.mutable_spec() = TinySpec(1, 2);
  r.mutable_spec()->mutable_trials()->set_max_trials(2);
  v1::SubmitStudyResponse out;
  ASSERT_TRUE(s.planner->SubmitStudy(Context().get(), r, &out).ok());
  std::optional<v1::TrialAssignment> a = agent.Lease();
  ASSERT_TRUE(a.has_value());
  // The process stops for 20 s (past the 3 s lease and the 10 s agent
  // timeout): its clock jumps, its reaper's next pass is 20 s late.
  clock.Advance(absl::Seconds(20));
  absl::SleepFor(absl::Milliseconds(300));  // several reaper passes
  v1::HeartbeatResponse hb;
  ASSERT_TRUE(agent.Heartbeat({a->trial_id()}, &hb).ok());
  EXPECT_EQ(hb.cancel_trials_size(), 0);
  db::Trial t = *s.server->store().GetTrial(a->trial_id());
  EXPECT_EQ(t.status, db::TrialState::kLeased) << t.reason;
  EXPECT_EQ(t.attempts, 0);
  ASSERT_TRUE(agent.Report(a->trial_id(), OkResultJson(*a, 0.3)).ok());
  EXPECT_EQ(s.server->store().GetTrial(a->trial_id())->status,
            db::TrialState::kOk);
  // The clock runs again: a lease whose agent falls silent still expires.
  std::optional<v1::TrialAssignment> b = agent.Lease();
  ASSERT_TRUE(b.has_value());
  for (int i = 0; i < 40; ++i) {  // 4 s in steps the reaper sees
    clock.Advance(absl::Milliseconds(100));
    absl::SleepFor(absl::Milliseconds(25));
  }
  absl::SleepFor(absl::Milliseconds(200));
  t = *s.server->store().GetTrial(b->trial_id());
  EXPECT_EQ(t.status, db::TrialState::kQueued) << t.reason;
  EXPECT_EQ(t.attempts, 1);
}

TEST(RestartTest, AStudyWaitingForAgentsStartsAfterTheRestart) {
  TempDir dir;
  ManualClock clock;
  const PlannerOptions options = TestOptions(dir.File("t.db"), clock);
  int64_t study = 0;
  {
    TestServer s = StartServer(options);
    v1::SubmitStudyRequest r;
    *r.mutable_spec() = TinySpec(1, 2);
    v1::SubmitStudyResponse out;
    ASSERT_TRUE(s.planner->SubmitStudy(Context().get(), r, &out).ok());
    study = out.study_id();
    const v1::GetStudyResponse st = GetStudy(s, study);
    EXPECT_EQ(st.study().state(), v1::STUDY_QUEUED);
    EXPECT_NE(st.study().state_reason().find("waiting for agents"),
              std::string::npos)
        << st.study().state_reason();
    EXPECT_TRUE(ListTrials(s, study).empty());
  }
  TestServer s = StartServer(options);
  ScriptedAgent agent(s, "cpu-a");
  ASSERT_TRUE(agent.Register().ok());
  EXPECT_EQ(GetStudy(s, study).study().state(), v1::STUDY_RUNNING);
  // One agent: one trial at a time.
  EXPECT_EQ(ListTrials(s, study).size(), 1u);
}

}  // namespace
}  // namespace tessera::service::testing
