// WatchStudy: the current state first, then the study's events in order;
// the stream ends after the final event, at once for a final study, and a
// client that goes away is unsubscribed.
#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
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

bool AnyMessageHas(const std::vector<v1::StudyEvent>& events,
                   absl::string_view text) {
  for (const v1::StudyEvent& e : events) {
    if (e.message().find(std::string(text)) != std::string::npos) return true;
  }
  return false;
}

TEST(WatchTest, StreamsTheStudyUntilItIsDone) {
  TempDir dir;
  ManualClock clock;
  TestServer s = StartServer(TestOptions(dir.File("t.db"), clock));
  ScriptedAgent agent(s, "cpu-a");
  ASSERT_TRUE(agent.Register().ok());
  v1::StudySpec spec = TinySpec(1, 2);
  spec.mutable_trials()->set_max_trials(2);
  spec.mutable_trials()->set_first_rung(2);
  const int64_t id = Submit(s, spec);

  std::vector<v1::StudyEvent> events;
  grpc::Status end;
  std::atomic<bool> subscribed{false};
  std::thread watcher([&] {
    grpc::ClientContext context;
    v1::WatchStudyRequest r;
    r.set_study_id(id);
    auto reader = s.planner->WatchStudy(&context, r);
    v1::StudyEvent e;
    while (reader->Read(&e)) {
      events.push_back(e);
      subscribed = true;
    }
    end = reader->Finish();
  });
  while (!subscribed) absl::SleepFor(absl::Milliseconds(5));
  for (int i = 0; i < 2; ++i) {
    std::optional<v1::TrialAssignment> a = agent.Lease();
    ASSERT_TRUE(a.has_value());
    ASSERT_TRUE(agent.Report(a->trial_id(), OkResultJson(*a, 0.01)).ok());
  }
  watcher.join();
  EXPECT_TRUE(end.ok()) << end.error_message();
  ASSERT_GE(events.size(), 5u);
  EXPECT_EQ(events.front().study().state(), v1::STUDY_RUNNING);
  // One agent: one trial queued at a time.
  EXPECT_EQ(events.front().study().trials_total(), 1);
  EXPECT_EQ(events.back().study().state(), v1::STUDY_DONE);
  EXPECT_TRUE(AnyMessageHas(events, "leased to cpu-a"));
  EXPECT_TRUE(AnyMessageHas(events, "recalibrated on 1 trial:"));
  EXPECT_TRUE(AnyMessageHas(events, "done: "));
  // A report event carries its trial and what it measured.
  bool reported = false;
  for (const v1::StudyEvent& e : events) {
    if (e.trial().state() == v1::TRIAL_OK) {
      reported = true;
      EXPECT_NEAR(e.trial().measured().tokens_per_s(), 8 * 128 / 0.01, 1e-6);
      EXPECT_NE(e.message().find("tokens/s"), std::string::npos);
    }
  }
  EXPECT_TRUE(reported);
  // Only the last event is final.
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    EXPECT_NE(events[i].study().state(), v1::STUDY_DONE) << i;
  }
  EXPECT_FALSE(s.core().studies().events().hub().HasSubscribers(id));

  // Watching a final study: its state, then the end.
  grpc::ClientContext context;
  v1::WatchStudyRequest r;
  r.set_study_id(id);
  auto reader = s.planner->WatchStudy(&context, r);
  v1::StudyEvent e;
  ASSERT_TRUE(reader->Read(&e));
  EXPECT_EQ(e.study().state(), v1::STUDY_DONE);
  EXPECT_FALSE(reader->Read(&e));
  EXPECT_TRUE(reader->Finish().ok());
}

TEST(WatchTest, AWatcherThatLeavesIsUnsubscribed) {
  TempDir dir;
  ManualClock clock;
  TestServer s = StartServer(TestOptions(dir.File("t.db"), clock));
  const int64_t id = Submit(s, TinySpec(1, 2));  // waits for agents
  grpc::ClientContext context;
  v1::WatchStudyRequest r;
  r.set_study_id(id);
  auto reader = s.planner->WatchStudy(&context, r);
  v1::StudyEvent e;
  ASSERT_TRUE(reader->Read(&e));
  EXPECT_EQ(e.study().state(), v1::STUDY_QUEUED);
  EXPECT_TRUE(s.core().studies().events().hub().HasSubscribers(id));
  context.TryCancel();
  EXPECT_FALSE(reader->Read(&e));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  for (int i = 0;
       i < 200 && s.core().studies().events().hub().HasSubscribers(id); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_FALSE(s.core().studies().events().hub().HasSubscribers(id));
}

TEST(WatchTest, ShutdownEndsOpenStreams) {
  TempDir dir;
  ManualClock clock;
  TestServer s = StartServer(TestOptions(dir.File("t.db"), clock));
  const int64_t id = Submit(s, TinySpec(1, 2));
  grpc::ClientContext context;
  v1::WatchStudyRequest r;
  r.set_study_id(id);
  auto reader = s.planner->WatchStudy(&context, r);
  v1::StudyEvent e;
  ASSERT_TRUE(reader->Read(&e));
  const absl::Time start = absl::Now();
  s.server->Shutdown(absl::Milliseconds(200));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_FALSE(reader->Read(&e));
  EXPECT_FALSE(reader->Finish().ok());
}

}  // namespace
}  // namespace tessera::service::testing

namespace tessera::service::testing {
namespace {

// The review: a study that lost its agents mid-study said nothing in watch.
TEST(WatchTest, AStudyThatLosesItsAgentsSaysSo) {
  TempDir dir;
  ManualClock clock;
  PlannerOptions options = TestOptions(dir.File("t.db"), clock);
  TestServer s = StartServer(options);
  ScriptedAgent a(s, "cpu-a");
  ScriptedAgent b(s, "cpu-b");
  ASSERT_TRUE(a.Register().ok());
  ASSERT_TRUE(b.Register().ok());
  v1::StudySpec spec = TinySpec(1, 2);
  spec.mutable_trials()->set_max_trials(4);
  spec.mutable_trials()->set_first_rung(4);
  const int64_t id = Submit(s, spec);

  std::vector<v1::StudyEvent> events;
  absl::Mutex mu;
  grpc::ClientContext context;
  std::atomic<bool> subscribed{false};
  std::thread watcher([&] {
    v1::WatchStudyRequest r;
    r.set_study_id(id);
    auto reader = s.planner->WatchStudy(&context, r);
    v1::StudyEvent e;
    while (reader->Read(&e)) {
      absl::MutexLock lock(&mu);
      events.push_back(e);
      subscribed = true;
    }
    (void)reader->Finish();
  });
  while (!subscribed) absl::SleepFor(absl::Milliseconds(5));
  const auto Saw = [&](absl::string_view text) {
    for (int i = 0; i < 400; ++i) {
      {
        absl::MutexLock lock(&mu);
        if (AnyMessageHas(events, text)) return true;
      }
      absl::SleepFor(absl::Milliseconds(5));
    }
    return false;
  };
  ASSERT_TRUE(a.Lease().has_value());
  // cpu-a goes silent; cpu-b heartbeats: the others can run the trials.
  clock.Advance(options.agent_timeout / 2);
  ASSERT_TRUE(b.Heartbeat({}).ok());
  clock.Advance(options.agent_timeout / 2 + absl::Seconds(1));
  s.Reap();
  EXPECT_TRUE(Saw("agent cpu-a sent no heartbeat for"));
  EXPECT_TRUE(Saw("marked gone; its trials run again on the others"));
  // Then cpu-b too: nothing left can run them.
  clock.Advance(options.agent_timeout + absl::Seconds(1));
  s.Reap();
  EXPECT_TRUE(Saw("agent cpu-b sent no heartbeat"));
  EXPECT_TRUE(
      Saw("the study is short of agents: no registered agent can run "
          "its trials"));
  context.TryCancel();
  watcher.join();
}

}  // namespace
}  // namespace tessera::service::testing
