#include "agents/rendezvous_relay.h"

#include <atomic>
#include <thread>

#include "agents/files.h"
#include "gtest/gtest.h"
#include "tests/agents/fake_planner.h"

namespace tessera::agents {
namespace {

using testing::FakePlanner;

class RelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (std::string* dir : {&node0_, &node1_}) {
      absl::StatusOr<std::string> d =
          MakeUniqueDirectory(::testing::TempDir(), "relay-");
      ASSERT_TRUE(d.ok());
      *dir = *d;
    }
    client_ = PlannerClient::Connect(planner_.address(), {});
    planner_.Hold(7, {"a", "b"});
  }
  void TearDown() override {
    (void)RemoveTree(node0_);
    (void)RemoveTree(node1_);
  }

  static RelayControl Control(absl::Duration timeout) {
    RelayControl control;
    control.deadline = absl::Now() + timeout;
    control.fetch_wait = absl::Milliseconds(300);
    return control;
  }

  FakePlanner planner_;
  std::unique_ptr<PlannerClient> client_;
  std::string node0_, node1_;
};

TEST_F(RelayTest, RankZerosFileReachesTheOtherAgent) {
  const std::string data = "10.1.2.3:41234\n";
  absl::Status fetched;
  std::thread fetcher([&] {
    fetched = FetchRendezvous(*client_, "b", 7, node1_ + "/rendezvous",
                              Control(absl::Seconds(20)));
  });
  absl::Status published;
  std::thread publisher([&] {
    published = PublishRendezvous(*client_, "a", 7, node0_ + "/rendezvous",
                                  Control(absl::Seconds(20)));
  });
  // Rank 0 writes its address a little later, as tessera-trial does.
  absl::SleepFor(absl::Milliseconds(400));
  ASSERT_FALSE(ReadFile(node1_ + "/rendezvous").ok());
  ASSERT_TRUE(WriteFileAtomically(node0_ + "/rendezvous", data).ok());
  publisher.join();
  fetcher.join();
  EXPECT_TRUE(published.ok()) << published;
  EXPECT_TRUE(fetched.ok()) << fetched;
  EXPECT_EQ(ReadFile(node1_ + "/rendezvous").value(), data);
}

TEST_F(RelayTest, AnAgentWithoutTheLeaseIsRefused) {
  absl::Status s = FetchRendezvous(*client_, "c", 7, node1_ + "/rendezvous",
                                   Control(absl::Seconds(20)));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_TRUE(IsLeaseGone(s));
  ASSERT_TRUE(WriteFileAtomically(node0_ + "/rendezvous", "x:1\n").ok());
  s = PublishRendezvous(*client_, "c", 7, node0_ + "/rendezvous",
                        Control(absl::Seconds(20)));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
}

TEST_F(RelayTest, StopAndDeadlineEndTheWait) {
  RelayControl stop = Control(absl::Seconds(20));
  std::atomic<bool> done{false};
  stop.should_stop = [&] { return done.load(); };
  std::thread stopper([&] {
    absl::SleepFor(absl::Milliseconds(200));
    done = true;
  });
  const absl::Time start = absl::Now();
  absl::Status s =
      PublishRendezvous(*client_, "a", 7, node0_ + "/rendezvous", stop);
  stopper.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  s = FetchRendezvous(*client_, "b", 7, node1_ + "/rendezvous",
                      Control(absl::Milliseconds(500)));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_F(RelayTest, FetchOutlastsAPlannerOutage) {
  planner_.Shutdown();
  absl::Status fetched;
  std::thread fetcher([&] {
    fetched = FetchRendezvous(*client_, "b", 7, node1_ + "/rendezvous",
                              Control(absl::Seconds(30)));
  });
  absl::SleepFor(absl::Milliseconds(700));  // a few refused attempts
  planner_.Start();
  ASSERT_TRUE(WriteFileAtomically(node0_ + "/rendezvous", "h:9\n").ok());
  EXPECT_TRUE(PublishRendezvous(*client_, "a", 7, node0_ + "/rendezvous",
                                Control(absl::Seconds(20)))
                  .ok());
  fetcher.join();
  EXPECT_TRUE(fetched.ok()) << fetched;
  EXPECT_EQ(ReadFile(node1_ + "/rendezvous").value(), "h:9\n");
}

}  // namespace
}  // namespace tessera::agents
