// What the planner's in-memory liveness needs of the store (issue 32):
// SaveLiveness writes heartbeats in one go, never moving a time back nor
// reviving what changed since; ListLeasesHeldBy and ListQueuedTrials answer
// a heartbeat and a lease poll with one read each.
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "db/sqlite.h"
#include "db/sqlite_trial_store.h"
#include "gtest/gtest.h"
#include "tests/db/test_util.h"

namespace tessera::db {
namespace {

using ::tessera::db::testing::SampleTrial;
using ::tessera::db::testing::StoreTest;
using ::tessera::db::testing::With;

class LivenessStoreTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    study_ = MakeStudy();
    Register("a");
    Register("b");
  }
  absl::Time LastHeartbeat(absl::string_view id) {
    absl::StatusOr<Agent> a = store_->GetAgent(id);
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? a->last_heartbeat_at : absl::InfinitePast();
  }
  int64_t study_ = 0;
};

TEST_F(LivenessStoreTest, SavesHeartbeatsForwardOnlyAndSkipsGoneAgents) {
  const absl::Time t0 = clock_.Now();
  ASSERT_TRUE(store_->MarkAgentGone("b").ok());
  const absl::Time gone_at = LastHeartbeat("b");
  ASSERT_TRUE(store_
                  ->SaveLiveness({{"a", t0 + absl::Seconds(5)},
                                  {"b", t0 + absl::Seconds(5)},
                                  {"nobody", t0 + absl::Seconds(5)}},
                                 {})
                  .ok());
  EXPECT_EQ(LastHeartbeat("a"), t0 + absl::Seconds(5));
  EXPECT_EQ(LastHeartbeat("b"), gone_at) << "a gone agent's heartbeat moved";
  EXPECT_EQ(store_->GetAgent("b")->state, AgentState::kGone);
  // An older heartbeat (a batch that lost a race) does not move it back.
  ASSERT_TRUE(store_->SaveLiveness({{"a", t0 + absl::Seconds(2)}}, {}).ok());
  EXPECT_EQ(LastHeartbeat("a"), t0 + absl::Seconds(5));
  const absl::Status bad = store_->SaveLiveness({{"no spaces", t0}}, {});
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("liveness.agents[0].agent_id"),
            absl::string_view::npos)
      << bad;
}

TEST_F(LivenessStoreTest, ExtendsOnlyLeasesTheAgentStillHolds) {
  const std::vector<int64_t> ids =
      MakeTrials(study_, {SampleTrial(), SampleTrial(4)});
  const absl::Time t0 = clock_.Now();
  ASSERT_TRUE(store_->LeaseTrial(ids[0], {"a"}, t0 + absl::Seconds(10)).ok());
  ASSERT_TRUE(store_->LeaseTrial(ids[1], {"b"}, t0 + absl::Seconds(10)).ok());
  ASSERT_TRUE(store_
                  ->SaveLiveness({}, {{ids[0], "a", t0 + absl::Seconds(30)},
                                      {ids[1], "a", t0 + absl::Seconds(30)}})
                  .ok());
  EXPECT_EQ(GetTrialOrDie(ids[0]).lease_expires_at, t0 + absl::Seconds(30));
  EXPECT_EQ(GetTrialOrDie(ids[1]).lease_expires_at, t0 + absl::Seconds(10))
      << "a lease was extended by an agent that does not hold it";
  // Never moved back.
  ASSERT_TRUE(
      store_->SaveLiveness({}, {{ids[0], "a", t0 + absl::Seconds(20)}}).ok());
  EXPECT_EQ(GetTrialOrDie(ids[0]).lease_expires_at, t0 + absl::Seconds(30));

  absl::StatusOr<std::vector<HeldLease>> held = store_->ListLeasesHeldBy("a");
  ASSERT_TRUE(held.ok()) << held.status();
  ASSERT_EQ(held->size(), 1u);
  EXPECT_EQ((*held)[0].trial_id, ids[0]);
  EXPECT_EQ((*held)[0].study_id, study_);
  EXPECT_EQ((*held)[0].started_at, t0);
  EXPECT_EQ((*held)[0].expires_at, t0 + absl::Seconds(30));
  ASSERT_TRUE(store_->ReleaseLease(ids[0], "a", "stopping").ok());
  EXPECT_TRUE(store_->ListLeasesHeldBy("a")->empty());
  // A hand-back's queued trial is not a lease to extend.
  ASSERT_TRUE(
      store_->SaveLiveness({}, {{ids[0], "a", t0 + absl::Seconds(90)}}).ok());
  EXPECT_FALSE(GetTrialOrDie(ids[0]).lease_expires_at.has_value());
}

TEST_F(LivenessStoreTest, QueuedTrialsComeInLeaseOrder) {
  const int64_t later = MakeStudy();
  NewTrial slow = SampleTrial(2);
  slow.predicted = With<TrialPrediction>([](auto& p) { p.tokens_per_s = 10; });
  NewTrial fast = SampleTrial(4);
  fast.predicted = With<TrialPrediction>([](auto& p) { p.tokens_per_s = 20; });
  NewTrial next_rung = SampleTrial(8);
  next_rung.rung = 1;
  next_rung.predicted = With<TrialPrediction>([](auto& p) { p.tokens_per_s = 99; });
  NewTrial unpredicted = SampleTrial(1);
  unpredicted.predicted.reset();
  const std::vector<int64_t> second = MakeTrials(later, {fast});
  const std::vector<int64_t> first =
      MakeTrials(study_, {next_rung, slow, unpredicted, fast});
  ASSERT_TRUE(store_->LeaseTrial(first[3], {"a"}, clock_.Now() +
                                                      absl::Seconds(9))
                  .ok());
  absl::StatusOr<std::vector<Trial>> queued =
      store_->ListQueuedTrials({later, study_}, 10, {});
  ASSERT_TRUE(queued.ok()) << queued.status();
  std::vector<int64_t> order;
  for (const Trial& t : *queued) order.push_back(t.id);
  // The older study first; rung 0 before 1; the faster prediction first,
  // none last; the leased trial not at all.
  EXPECT_EQ(order, (std::vector<int64_t>{first[1], first[2], first[0],
                                         second[0]}));
  // Trials whose leases are being written are passed over: the limit counts
  // the trials a poll can take.
  queued = store_->ListQueuedTrials({later, study_}, 2, {first[1], first[0]});
  ASSERT_TRUE(queued.ok()) << queued.status();
  order.clear();
  for (const Trial& t : *queued) order.push_back(t.id);
  EXPECT_EQ(order, (std::vector<int64_t>{first[2], second[0]}));
  EXPECT_EQ(store_->ListQueuedTrials({study_}, 2, {})->size(), 2u);
  EXPECT_TRUE(store_->ListQueuedTrials({}, 5, {})->empty());
  EXPECT_EQ(store_->ListQueuedTrials({study_}, 0, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// An idle fleet polls LeaseTrial hundreds of times a second: each poll reads
// the next few queued trials from an index already in lease order, and
// never sorts every queued trial of every open study.
TEST_F(LivenessStoreTest, TheLeasePollReadsQueuedTrialsFromAnIndexInOrder) {
  const int64_t later = MakeStudy();
  absl::StatusOr<std::vector<std::string>> plan =
      store_->ExplainListQueuedTrials({study_, later}, 1, {3, 5});
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string text = absl::StrJoin(*plan, "\n");
  EXPECT_TRUE(absl::StrContains(text, "trials_by_study_in_lease_order")) << text;
  EXPECT_FALSE(absl::StrContains(text, "TEMP B-TREE")) << text;
  EXPECT_EQ(store_->ExplainListQueuedTrials({study_}, 0, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Every heartbeat reads the leases its agent holds: from the agent's
// leases, never by walking trials by status. An index on trials by status
// (tried once for a refit's read) made SQLite, which has no statistics,
// walk every leased trial of the fleet on each heartbeat; the query keeps
// its status term off the indexes, so even with such an index it cannot.
TEST_F(LivenessStoreTest, AHeartbeatReadsItsAgentsLeasesNotEveryLeasedTrial) {
  {
    absl::StatusOr<std::unique_ptr<Database>> db =
        Database::Open(path_, DatabaseOptions{});
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE(
        (*db)->Exec("CREATE INDEX trials_by_status ON trials (status)").ok());
  }
  absl::StatusOr<std::vector<std::string>> plan =
      store_->ExplainListLeasesHeldBy("a");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string text = absl::StrJoin(*plan, "\n");
  ASSERT_FALSE(plan->empty());
  EXPECT_TRUE(absl::StrContains(plan->front(), "trial_leases_by_agent"))
      << text;
  EXPECT_FALSE(absl::StrContains(text, "trials_by_status")) << text;
  EXPECT_FALSE(absl::StrContains(text, "trials_by_lease")) << text;
}

}  // namespace
}  // namespace tessera::db
