// Crash safety: a child process reports trials and is killed with SIGKILL at
// a random point; the reopened database holds each trial either fully
// reported (result and every per-step row) or not at all, and every report
// the child saw acknowledged is there.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>
#include <set>

#include "absl/time/clock.h"
#include "db/sqlite.h"
#include "db/sqlite_trial_store.h"
#include "gtest/gtest.h"
#include "tests/db/test_util.h"

namespace tessera::db {
namespace {

using ::tessera::db::testing::ManualClock;
using ::tessera::db::testing::OpenStore;
using ::tessera::db::testing::SampleAgent;
using ::tessera::db::testing::SampleResult;
using ::tessera::db::testing::SampleStudy;
using ::tessera::db::testing::SampleTrial;
using ::tessera::db::testing::TempDir;

constexpr int kTrials = 40;
constexpr int64_t kSteps = 400;  // per-step rows: long transactions to hit

double SeedOf(int64_t trial_id) { return 1.0 + 0.01 * trial_id; }

// The child: reports every trial, writing each acknowledged id to `ack_fd`.
// Never returns.
[[noreturn]] void ReportInChild(const std::string& path,
                                const std::vector<int64_t>& ids, int ack_fd) {
  SqliteTrialStoreOptions options;
  auto store = SqliteTrialStore::Open(path, options);
  if (!store.ok()) _exit(2);
  for (int64_t id : ids) {
    const absl::Status s = (*store)->ReportTrial(
        id, "a", SampleResult(TrialStatus::kOk, SeedOf(id), kSteps),
        absl::Now());
    if (!s.ok()) _exit(3);
    if (write(ack_fd, &id, sizeof(id)) != sizeof(id)) _exit(4);
  }
  _exit(0);
}

std::set<int64_t> ReadAcks(int fd) {
  std::set<int64_t> acks;
  int64_t id = 0;
  while (read(fd, &id, sizeof(id)) == sizeof(id)) acks.insert(id);
  return acks;
}

TEST(CrashTest, KilledReporterLeavesWholeReportsOrNone) {
  std::mt19937 rng(2024);
  int partial_rounds = 0;
  for (int round = 0; round < 8; ++round) {
    TempDir dir;
    ManualClock clock;
    const std::string path = dir.File("crash.db");
    std::vector<int64_t> ids;
    {
      auto store = OpenStore(path, clock);
      ASSERT_NE(store, nullptr);
      auto study = store->CreateStudy(SampleStudy());
      ASSERT_TRUE(study.ok());
      ASSERT_TRUE(store->UpsertAgent(SampleAgent("a")).ok());
      ids = *store->AddTrials(study->id,
                              std::vector<NewTrial>(kTrials, SampleTrial()));
      for (int64_t id : ids) {
        ASSERT_TRUE(
            store->LeaseTrial(id, {"a"}, clock.Now() + absl::Hours(1)).ok());
      }
    }  // closed: the child must not share this process's connections

    int pipe_fds[2];
    ASSERT_EQ(pipe(pipe_fds), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(pipe_fds[0]);
      ReportInChild(path, ids, pipe_fds[1]);
    }
    close(pipe_fds[1]);
    // Wait for a random number of acknowledged reports, then a random
    // moment more, then kill.
    const int wait_for =
        std::uniform_int_distribution<int>(0, kTrials / 2)(rng);
    std::set<int64_t> acks;
    for (int i = 0; i < wait_for; ++i) {
      int64_t id = 0;
      ASSERT_EQ(read(pipe_fds[0], &id, sizeof(id)),
                static_cast<ssize_t>(sizeof(id)));
      acks.insert(id);
    }
    absl::SleepFor(
        absl::Microseconds(std::uniform_int_distribution<int>(0, 3000)(rng)));
    ASSERT_EQ(kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    const bool killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    ASSERT_TRUE(killed || (WIFEXITED(status) && WEXITSTATUS(status) == 0))
        << "child failed on its own: status " << status;
    for (int64_t id : ReadAcks(pipe_fds[0])) acks.insert(id);
    close(pipe_fds[0]);

    {
      auto db = Database::Open(path, DatabaseOptions{});
      ASSERT_TRUE(db.ok());
      auto check = (*db)->Prepare("PRAGMA integrity_check");
      ASSERT_TRUE(check.ok());
      ASSERT_TRUE(*check->Step());
      EXPECT_EQ(check->ColumnText(0), "ok");
    }
    auto store = OpenStore(path, clock);
    ASSERT_NE(store, nullptr);
    int reported = 0;
    for (int64_t id : ids) {
      auto t = store->GetTrial(id);
      ASSERT_TRUE(t.ok());
      auto metrics = store->GetTrialMetrics(id);
      ASSERT_TRUE(metrics.ok());
      if (t->status == TrialState::kOk) {
        ++reported;
        const TrialResult want =
            SampleResult(TrialStatus::kOk, SeedOf(id), kSteps);
        EXPECT_EQ(t->reported_by, "a");
        EXPECT_TRUE(t->lease_agent_ids.empty());
        EXPECT_DOUBLE_EQ(t->measured->tokens_per_s, want.tokens_per_s);
        ASSERT_EQ(metrics->size(), static_cast<size_t>(kSteps)) << id;
        EXPECT_DOUBLE_EQ(metrics->back().loss, want.loss.back());
      } else {
        EXPECT_EQ(t->status, TrialState::kLeased) << id;
        EXPECT_EQ(t->lease_agent_ids, std::vector<std::string>{"a"});
        EXPECT_EQ(t->result_json, "");
        EXPECT_TRUE(metrics->empty()) << id;
        EXPECT_EQ(acks.count(id), 0u)
            << "acknowledged report " << id << " lost";
      }
    }
    EXPECT_GE(reported, static_cast<int>(acks.size()));
    if (reported > 0 && reported < kTrials) ++partial_rounds;
  }
  // The kills landed mid-stream, not only before or after everything.
  EXPECT_GE(partial_rounds, 4);
}

}  // namespace
}  // namespace tessera::db
