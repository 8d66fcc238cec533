// Liveness in memory (service/agent_liveness.h) and a restart with
// 2,000 agents: heartbeats write nothing until the reaper's pass; a planner
// that dies between passes loses the last heartbeats, and the restart still
// marks gone exactly the agents that stopped, an agent timeout after it,
// and none of those that go on.
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "service/planner.h"
#include "tests/service/planner/test_harness.h"

namespace tessera::service {
namespace {

using testing::ManualClock;
using testing::TempDir;

constexpr int kAgents = 2000;
constexpr int kDead = 100;  // the last kDead agents stop before the crash

std::string AgentId(int i) { return absl::StrFormat("node-%04d", i); }

class FleetRestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db::SqliteTrialStoreOptions o;
    o.clock = clock_.AsClock();
    o.database.synchronous = db::Synchronous::kNormal;  // a fast suite
    absl::StatusOr<std::unique_ptr<db::SqliteTrialStore>> store =
        db::SqliteTrialStore::Open(dir_.File("t.db"), o);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  PlannerOptions Options() {
    PlannerOptions o;
    o.heartbeat_interval = absl::Seconds(1);
    o.lease_poll_interval = absl::Seconds(1);
    o.lease_timeout = absl::Seconds(10);
    o.agent_timeout = absl::Seconds(30);
    o.reaper_period = absl::ZeroDuration();
    o.clock = clock_.AsClock();
    o.log = Log(LogLevel::kOff);
    return o;
  }
  std::unique_ptr<Planner> Start() {
    absl::StatusOr<std::unique_ptr<Planner>> p =
        Planner::Create(store_.get(), Options());
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *std::move(p) : nullptr;
  }
  void Beat(Planner& p, int from, int to) {
    for (int i = from; i < to; ++i) {
      ASSERT_TRUE(p.leases().Heartbeat(AgentId(i), {}).ok()) << AgentId(i);
    }
  }
  absl::Time StoredHeartbeat(int i) {
    absl::StatusOr<db::Agent> a = store_->GetAgent(AgentId(i));
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? a->last_heartbeat_at : absl::InfinitePast();
  }
  std::set<std::string> Gone() {
    std::set<std::string> ids;
    absl::StatusOr<std::vector<db::Agent>> gone =
        store_->ListAgents(db::AgentState::kGone);
    EXPECT_TRUE(gone.ok()) << gone.status();
    if (!gone.ok()) return ids;
    for (const db::Agent& a : *gone) ids.insert(a.info.id);
    return ids;
  }

  TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<db::SqliteTrialStore> store_;
};

TEST_F(FleetRestartTest, TwoThousandAgentsAndOnlyTheDeadAreFoundGone) {
  const absl::Time t0 = clock_.Now();
  std::unique_ptr<Planner> before = Start();
  ASSERT_NE(before, nullptr);
  for (int i = 0; i < kAgents; ++i) {
    db::AgentRegistration r;
    r.id = AgentId(i);
    r.hostname = AgentId(i);
    r.backend = "cpu";
    r.gpu_count = 8;
    ASSERT_TRUE(before->leases().Register(r).ok());
  }
  // Heartbeats write nothing: 2,000 of them, not one transaction.
  clock_.Advance(absl::Seconds(5));
  const int64_t writes = store_->writes();
  Beat(*before, 0, kAgents);
  EXPECT_EQ(store_->writes(), writes);
  EXPECT_EQ(StoredHeartbeat(0), t0);
  // The reaper's pass writes them, in one transaction (its expiry pass is
  // the other).
  before->leases().Reap();
  EXPECT_EQ(store_->writes(), writes + 2);
  EXPECT_EQ(StoredHeartbeat(0), t0 + absl::Seconds(5));

  // The last kDead agents stop; the others beat once more, and the planner
  // dies before its next pass (abandoned: nothing of it runs again).
  clock_.Advance(absl::Seconds(5));
  Beat(*before, 0, kAgents - kDead);
  EXPECT_EQ(StoredHeartbeat(0), t0 + absl::Seconds(5)) << "not written yet";

  // 30 s later a new planner starts on the store: every stored heartbeat is
  // 35 s old, past the agent timeout, yet the time it was down counts
  // against nobody.
  clock_.Advance(absl::Seconds(30));
  const absl::Time restart = clock_.Now();
  std::unique_ptr<Planner> after = Start();
  ASSERT_NE(after, nullptr);
  after->leases().Reap();
  EXPECT_TRUE(Gone().empty()) << Gone().size() << " agents gone at restart";
  // The living go on beating; the dead stay silent.
  for (int s = 5; s <= 30; s += 5) {
    clock_.Advance(absl::Seconds(5));
    Beat(*after, 0, kAgents - kDead);
    after->leases().Reap();
    if (clock_.Now() - restart <= absl::Seconds(30)) {
      EXPECT_TRUE(Gone().empty()) << "gone before the agent timeout";
    }
  }
  clock_.Advance(absl::Seconds(1));
  after->leases().Reap();
  std::set<std::string> dead;
  for (int i = kAgents - kDead; i < kAgents; ++i) dead.insert(AgentId(i));
  EXPECT_EQ(Gone(), dead);
  EXPECT_EQ(store_->ListAgents(db::AgentState::kActive)->size(),
            static_cast<size_t>(kAgents - kDead));
  // A gone agent's heartbeat is refused until it registers again.
  EXPECT_EQ(after->leases().Heartbeat(AgentId(kAgents - 1), {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  after.reset();
  before.reset();
}

}  // namespace
}  // namespace tessera::service
