// Durability and concurrency of the SQLite store: everything is there after
// the store is destroyed and reopened; threads reporting at once lose
// nothing and see no busy errors; readers are not blocked by a writer.
#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "db/sqlite.h"
#include "db/sqlite_trial_store.h"
#include "gtest/gtest.h"
#include "tests/db/test_util.h"

namespace tessera::db {
namespace {

using ::tessera::db::testing::CountRows;
using ::tessera::db::testing::DumpDatabase;
using ::tessera::db::testing::ManualClock;
using ::tessera::db::testing::OpenStore;
using ::tessera::db::testing::SampleAgent;
using ::tessera::db::testing::SampleResult;
using ::tessera::db::testing::SampleStudy;
using ::tessera::db::testing::SampleTrial;
using ::tessera::db::testing::TempDir;
using ::tessera::db::testing::With;

TEST(DurabilityTest, EverythingIsThereAfterReopening) {
  TempDir dir;
  ManualClock clock;
  const std::string path = dir.File("a.db");
  int64_t study_id = 0;
  std::vector<int64_t> trial_ids;
  std::string dump;
  {
    auto store = OpenStore(path, clock);
    ASSERT_NE(store, nullptr);
    auto study = store->CreateStudy(SampleStudy());
    ASSERT_TRUE(study.ok());
    study_id = study->id;
    ASSERT_TRUE(
        store->SetStudyStatus(study_id, StudyStatus::kRunning, "").ok());
    ASSERT_TRUE(store->SetRecommendation(study_id, R"({"tp": 2})").ok());
    trial_ids = *store->AddTrials(study_id, {SampleTrial(), SampleTrial(4)});
    ASSERT_TRUE(store->UpsertAgent(SampleAgent("a")).ok());
    ASSERT_TRUE(store
                    ->AddProbes("a", {With<Probe>([](Probe& p) {
                                  p.kind = "gemm";
                                  p.value = 1e6;
                                  p.unit = "GFLOP/s";
                                })})
                    .ok());
    ASSERT_TRUE(store->LeaseTrial(trial_ids[0], {"a"}, clock.Now()).ok());
    ASSERT_TRUE(
        store->LeaseTrial(trial_ids[1], {"a"}, clock.Now() + absl::Hours(1))
            .ok());
    ASSERT_TRUE(
        store->ReportTrial(trial_ids[0], "a", SampleResult(), clock.Now())
            .ok());
    Calibration c;
    c.scope = StudyScope(study_id);
    c.coefficients = {{"gemm_efficiency", 0.5}};
    c.samples = 1;
    ASSERT_TRUE(store->SaveCalibration(c).ok());
    dump = DumpDatabase(path);
    // Destroyed without any Close: the commits are already durable.
  }
  auto store = OpenStore(path, clock);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(DumpDatabase(path), dump);
  auto study = store->GetStudy(study_id);
  ASSERT_TRUE(study.ok());
  EXPECT_EQ(study->status, StudyStatus::kRunning);
  EXPECT_EQ(study->recommendation_json, R"({"tp": 2})");
  auto reported = store->GetTrial(trial_ids[0]);
  EXPECT_EQ(reported->status, TrialState::kOk);
  EXPECT_EQ(store->GetTrialMetrics(trial_ids[0])->size(), 12u);
  auto leased = store->GetTrial(trial_ids[1]);
  EXPECT_EQ(leased->status, TrialState::kLeased);
  EXPECT_EQ(leased->lease_agent_ids, std::vector<std::string>{"a"});
  EXPECT_EQ(store->ListProbes({})->size(), 1u);
  EXPECT_TRUE(store->LatestCalibration(StudyScope(study_id)).ok());
  // A restarted planner resumes: the lease that ran out is re-queued.
  clock.Advance(absl::Hours(2));
  auto requeued = store->RequeueExpiredLeases(clock.Now());
  ASSERT_TRUE(requeued.ok());
  EXPECT_EQ(requeued->requeued, std::vector<int64_t>{trial_ids[1]});
}

// Sets up `per_thread` * `threads` leased trials, agent "agent-<i>" holding
// the trials of thread i; returns the trial ids by thread.
std::vector<std::vector<int64_t>> LeasedTrials(SqliteTrialStore& store,
                                               const ManualClock& clock,
                                               int threads, int per_thread) {
  auto study = store.CreateStudy(SampleStudy());
  EXPECT_TRUE(study.ok());
  std::vector<std::vector<int64_t>> ids(threads);
  for (int i = 0; i < threads; ++i) {
    const std::string agent = absl::StrCat("agent-", i);
    EXPECT_TRUE(store.UpsertAgent(SampleAgent(agent)).ok());
    ids[i] = *store.AddTrials(study->id,
                              std::vector<NewTrial>(per_thread, SampleTrial()));
    for (int64_t id : ids[i]) {
      EXPECT_TRUE(
          store.LeaseTrial(id, {agent}, clock.Now() + absl::Hours(1)).ok());
    }
  }
  return ids;
}

void ExpectAllReported(SqliteTrialStore& store, const std::string& path,
                       const std::vector<std::vector<int64_t>>& ids,
                       int64_t steps) {
  int64_t total = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    for (int64_t id : ids[i]) {
      auto t = store.GetTrial(id);
      ASSERT_TRUE(t.ok());
      EXPECT_EQ(t->status, TrialState::kOk);
      EXPECT_EQ(t->reported_by, absl::StrCat("agent-", i));
      ++total;
    }
  }
  EXPECT_EQ(CountRows(path, "trial_metrics"), total * steps);
  EXPECT_EQ(CountRows(path, "trial_leases"), 0);
}

// Several stores (connections) on one file, as several planner processes
// would be: real lock contention, resolved by busy_timeout and the retry.
TEST(ConcurrencyTest, ThreadsWithTheirOwnStoresLoseNoReport) {
  TempDir dir;
  ManualClock clock;
  const std::string path = dir.File("a.db");
  auto setup = OpenStore(path, clock);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 25;
  constexpr int64_t kSteps = 30;
  const auto ids = LeasedTrials(*setup, clock, kThreads, kPerThread);
  std::atomic<int> failures{0};
  std::atomic<bool> writing{true};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      SqliteTrialStoreOptions options;
      options.clock = clock.AsClock();
      auto store = SqliteTrialStore::Open(path, options);
      if (!store.ok()) {
        ADD_FAILURE() << store.status();
        ++failures;
        return;
      }
      const std::string agent = absl::StrCat("agent-", i);
      for (int64_t id : ids[i]) {
        absl::Status s = (*store)->ReportTrial(
            id, agent, SampleResult(TrialStatus::kOk, 1.0, kSteps),
            clock.Now());
        if (!s.ok()) {
          ADD_FAILURE() << s;
          ++failures;
        }
        if (!(*store)->Heartbeat(agent, clock.Now()).ok()) ++failures;
      }
    });
  }
  // A reader the whole time: history queries while the writers write.
  std::thread reader([&] {
    while (writing) {
      auto trials = setup->ListTrials(
          With<TrialFilter>([](auto& f) { f.statuses = {TrialState::kOk}; }));
      if (!trials.ok()) {
        ADD_FAILURE() << trials.status();
        ++failures;
      }
    }
  });
  for (auto& t : threads) t.join();
  writing = false;
  reader.join();
  EXPECT_EQ(failures, 0);
  ExpectAllReported(*setup, path, ids, kSteps);
}

// One store shared by many threads: its writes are serialized inside.
TEST(ConcurrencyTest, ThreadsSharingOneStoreLoseNoReport) {
  TempDir dir;
  ManualClock clock;
  const std::string path = dir.File("a.db");
  auto store = OpenStore(path, clock);
  constexpr int kThreads = 8;
  constexpr int kPerThread = 10;
  const auto ids = LeasedTrials(*store, clock, kThreads, kPerThread);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      const std::string agent = absl::StrCat("agent-", i);
      for (int64_t id : ids[i]) {
        // Each report twice, as a retrying agent would: the second is
        // AlreadyExists, never a second result.
        for (int attempt = 0; attempt < 2; ++attempt) {
          absl::Status s =
              store->ReportTrial(id, agent, SampleResult(), clock.Now());
          const bool expected =
              attempt == 0 ? s.ok() : absl::IsAlreadyExists(s);
          if (!expected) {
            ADD_FAILURE() << s;
            ++failures;
          }
        }
        if (!store->GetTrial(id).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  ExpectAllReported(*store, path, ids, 12);
}

// A reader is served while another connection holds the write lock.
TEST(ConcurrencyTest, ReadsAreNotBlockedByAnOpenWriteTransaction) {
  TempDir dir;
  ManualClock clock;
  const std::string path = dir.File("a.db");
  SqliteTrialStoreOptions options;
  options.clock = clock.AsClock();
  options.database.busy_timeout = absl::ZeroDuration();  // busy = fail at once
  options.database.retry.max_attempts = 1;
  auto store = SqliteTrialStore::Open(path, options);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->CreateStudy(SampleStudy()).ok());

  auto other = Database::Open(path, DatabaseOptions{});
  ASSERT_TRUE(other.ok());
  auto txn = Transaction::Begin(**other, TransactionMode::kImmediate);
  ASSERT_TRUE(txn.ok());
  ASSERT_TRUE((*other)
                  ->Exec("INSERT INTO studies (name, spec_json, model, gpu, "
                         "nodes, gpus_per_node, status, created_at_us, "
                         "updated_at_us) VALUES ('x', '{}', 'm', 'g', 1, 1, "
                         "'queued', 0, 0)")
                  .ok());
  auto studies = (*store)->ListStudies({});
  ASSERT_TRUE(studies.ok()) << studies.status();
  EXPECT_EQ(studies->size(), 1u);  // the uncommitted one is not seen
  // The store's writer, by contrast, finds the lock taken (no waiting here).
  absl::Status write = (*store)->CreateStudy(SampleStudy()).status();
  EXPECT_TRUE(IsBusy(write)) << write;
  ASSERT_TRUE(txn->Commit().ok());
  EXPECT_EQ((*store)->ListStudies({})->size(), 2u);
  EXPECT_TRUE((*store)->CreateStudy(SampleStudy()).ok());
}

}  // namespace
}  // namespace tessera::db
