// Heavy callers over real gRPC (issue 15, "Limits"): ten users asking at once
// for the largest Plan the service answers do not queue without bound (the
// pool refuses past its threads and queue with RESOURCE_EXHAUSTED, "planner
// busy") and do not stop an agent's heartbeat from being answered while
// they run. Before the pool, each Plan ran on one of gRPC's threads: ten of
// them grew the planner by gigabytes and stalled heartbeats past the lease.
// The latency target itself (heartbeat p99 under 50 ms) is measured by
// bench/service/planner_load_bench --plan-callers 10, not timed here.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/service/planner/maximal_plan.h"
#include "tests/service/planner/test_harness.h"

namespace tessera::service::testing {
namespace {

TEST(HeavyCallersTest, PlansPastThePoolAreRefusedAndHeartbeatsServed) {
  TempDir dir;
  ManualClock clock;
  PlannerOptions options = TestOptions(dir.File("t.db"), clock);
  options.search_pool = {.threads = 1, .max_queued = 1};
  TestServer s = StartServer(options);
  ScriptedAgent agent(s, "cpu-a");
  ASSERT_TRUE(agent.Register().ok());

  constexpr int kCallers = 10;
  std::atomic<int> ok{0}, busy{0}, other{0};
  std::string busy_message, other_message;
  std::atomic<bool> go{false};
  std::vector<std::thread> callers;
  for (int i = 0; i < kCallers; ++i) {
    callers.emplace_back([&, i] {
      while (!go.load()) std::this_thread::yield();
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() +
                           std::chrono::seconds(60));
      v1::PlanResponse out;
      const grpc::Status st = s.planner->Plan(&context, MaximalPlan(), &out);
      if (st.ok() && out.candidates_size() == 1000) {
        ++ok;
      } else if (st.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
        if (++busy == 1) busy_message = st.error_message();
      } else if (++other == 1) {
        other_message =
            absl::StrCat(i, ": ", st.error_code(), " ", st.error_message(), " ",
                         out.candidates_size());
      }
    });
  }
  go = true;
  // Heartbeats are answered while the searches run.
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(agent.Heartbeat({}).ok());
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(other.load(), 0) << other_message;
  EXPECT_GE(ok.load(), 1);
  EXPECT_GE(busy.load(), 1);
  EXPECT_EQ(ok.load() + busy.load(), kCallers);
  EXPECT_NE(busy_message.find("planner busy: Plan and Predict calls"),
            std::string::npos)
      << busy_message;
  // Once they are done, the pool takes calls again.
  v1::PlanResponse out;
  EXPECT_TRUE(s.planner->Plan(Context().get(), MaximalPlan(), &out).ok());
}

// A request past kMaxRequestBytes is refused before the planner parses it.
TEST(HeavyCallersTest, ARequestPastTheLimitIsRefusedUnread) {
  TempDir dir;
  ManualClock clock;
  TestServer s = StartServer(TestOptions(dir.File("t.db"), clock));
  v1::SubmitStudyRequest r;
  *r.mutable_spec() = TinySpec(1, 2);
  r.mutable_spec()->set_name(std::string(kMaxRequestBytes + 1, 'x'));
  v1::SubmitStudyResponse out;
  const grpc::Status st = s.planner->SubmitStudy(Context().get(), r, &out);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << st.error_message();
  v1::ListStudiesResponse studies;
  ASSERT_TRUE(s.planner->ListStudies(Context().get(), {}, &studies).ok());
  EXPECT_EQ(studies.studies_size(), 0);
}

}  // namespace
}  // namespace tessera::service::testing
