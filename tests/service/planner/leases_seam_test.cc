// The lease side of the planner on its own (service/leases.h): a
// real SQLite store, and a StudyDesk that records what leasing tells the
// studies and answers what it asks, so that each named call of the seam
// (study_desk.h, OpenStudy / CloseStudy) is seen to be made, and made only
// where it should be.
#include <atomic>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "db/sqlite_trial_store.h"
#include "gtest/gtest.h"
#include "service/leases.h"
#include "service/study_desk.h"
#include "service/study_events.h"
#include "service/study_queries.h"

namespace tessera::service {
namespace {

class RecordingDesk final : public StudyDesk {
 public:
  void SetActive(std::set<int64_t> ids) {
    absl::MutexLock lock(&mu_);
    active_ = std::move(ids);
  }
  std::vector<int64_t> changed() {
    absl::MutexLock lock(&mu_);
    return changed_;
  }
  std::vector<std::string> lost() {
    absl::MutexLock lock(&mu_);
    return lost_;
  }
  absl::Duration lost_after() {
    absl::MutexLock lock(&mu_);
    return lost_after_;
  }
  std::vector<absl::Time> ticks() {
    absl::MutexLock lock(&mu_);
    return ticks_;
  }
  int agents_changed() const { return agents_changed_.load(); }

  bool IsActive(int64_t study_id) override {
    absl::MutexLock lock(&mu_);
    return active_.count(study_id) > 0;
  }
  std::optional<Workload> TrialWorkload(const db::Trial&) override {
    return std::nullopt;
  }
  void TrialChanged(int64_t study_id) override {
    absl::MutexLock lock(&mu_);
    changed_.push_back(study_id);
  }
  void AgentsChanged() override { ++agents_changed_; }
  void AgentsLost(const std::vector<std::string>& lost,
                  absl::Duration silence) override {
    absl::MutexLock lock(&mu_);
    lost_.insert(lost_.end(), lost.begin(), lost.end());
    lost_after_ = silence;
  }
  void ClusterProbed(const std::string&, const std::string&) override {}
  void Tick(absl::Time now) override {
    absl::MutexLock lock(&mu_);
    ticks_.push_back(now);
  }

 private:
  absl::Mutex mu_;
  std::set<int64_t> active_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> changed_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> lost_ ABSL_GUARDED_BY(mu_);
  absl::Duration lost_after_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Time> ticks_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> agents_changed_{0};
};

class LeasesSeamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tessera_leases_seam_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    db::SqliteTrialStoreOptions store_options;
    store_options.clock = [this] { return Now(); };
    absl::StatusOr<std::unique_ptr<db::SqliteTrialStore>> store =
        db::SqliteTrialStore::Open((dir_ / "t.db").string(), store_options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    queries_ = std::make_unique<StudyQueries>(store_.get());
    events_ = std::make_unique<StudyEvents>(queries_.get(), Log(LogLevel::kOff),
                                            [this] { return Now(); });
    PlannerOptions options;
    options.heartbeat_interval = absl::Seconds(1);
    options.lease_poll_interval = absl::Seconds(1);
    options.lease_timeout = absl::Seconds(10);
    options.agent_timeout = absl::Seconds(30);
    options.reaper_period = absl::ZeroDuration();
    options.clock = [this] { return Now(); };
    options.log = Log(LogLevel::kOff);
    leases_ =
        std::make_unique<Leases>(store_.get(), options, events_.get(), &desk_);
    db::AgentRegistration a;
    a.id = "a1";
    a.hostname = "h1";
    a.backend = "cpu";
    a.gpu_count = 2;
    ASSERT_TRUE(leases_->Register(a).ok());
    db::NewStudy s;
    s.name = "seam";
    s.spec_json = "{}";
    s.model = "custom";
    s.gpu = "H100";
    absl::StatusOr<db::Study> study = store_->CreateStudy(s);
    ASSERT_TRUE(study.ok()) << study.status();
    study_ = study->id;
  }
  void TearDown() override {
    leases_.reset();
    events_.reset();
    queries_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  absl::Time Now() {
    absl::MutexLock lock(&clock_mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&clock_mu_);
    now_ += d;
  }
  int64_t QueueTrial() {
    db::NewTrial t;
    t.layout.dp = 2;
    t.layout.grad_accum = 1;
    absl::StatusOr<std::vector<int64_t>> ids = store_->AddTrials(study_, {t});
    EXPECT_TRUE(ids.ok()) << ids.status();
    return ids.ok() ? ids->front() : 0;
  }
  LeasableStudy Cpu() {
    LeasableStudy s;
    s.backend = "cpu";
    s.ranks_per_agent = 1;
    s.cluster = "H100";
    return s;
  }
  db::TrialState State(int64_t trial_id) {
    absl::StatusOr<db::Trial> t = store_->GetTrial(trial_id);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? t->status : db::TrialState::kCrash;
  }

  std::filesystem::path dir_;
  absl::Mutex clock_mu_;
  absl::Time now_ ABSL_GUARDED_BY(clock_mu_) =
      absl::FromUnixSeconds(1'700'000'000);
  std::unique_ptr<db::SqliteTrialStore> store_;
  std::unique_ptr<StudyQueries> queries_;
  std::unique_ptr<StudyEvents> events_;
  RecordingDesk desk_;
  std::unique_ptr<Leases> leases_;
  int64_t study_ = 0;
};

TEST_F(LeasesSeamTest, OnlyAnOpenStudysTrialsAreLeased) {
  const int64_t trial = QueueTrial();
  absl::StatusOr<std::optional<v1::TrialAssignment>> a =
      leases_->LeaseTrial("a1");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->has_value()) << "leased a trial of a study never opened";
  leases_->OpenStudy(study_, Cpu());
  EXPECT_TRUE(leases_->IsOpen(study_));
  a = leases_->LeaseTrial("a1");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(a->has_value());
  EXPECT_EQ((*a)->trial_id(), trial);
  EXPECT_EQ((*a)->backend(), "cpu");
  EXPECT_EQ(State(trial), db::TrialState::kLeased);

  leases_->CloseStudy(study_);
  EXPECT_FALSE(leases_->IsOpen(study_));
  QueueTrial();
  ASSERT_TRUE(leases_->ReleaseTrial("a1", trial, "done with it", false).ok());
  a = leases_->LeaseTrial("a1");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->has_value()) << "leased a trial of a closed study";
}

TEST_F(LeasesSeamTest, HeartbeatStopsTrialsOfStudiesNoLongerActive) {
  leases_->OpenStudy(study_, Cpu());
  const int64_t trial = QueueTrial();
  ASSERT_TRUE(leases_->LeaseTrial("a1").ok());
  desk_.SetActive({study_});
  absl::StatusOr<std::vector<int64_t>> stop = leases_->Heartbeat("a1", {trial});
  ASSERT_TRUE(stop.ok()) << stop.status();
  EXPECT_TRUE(stop->empty());
  desk_.SetActive({});
  stop = leases_->Heartbeat("a1", {trial});
  ASSERT_TRUE(stop.ok()) << stop.status();
  EXPECT_EQ(*stop, std::vector<int64_t>{trial});
  // A trial it runs but does not hold is stopped whatever its study.
  desk_.SetActive({study_});
  stop = leases_->Heartbeat("a1", {trial, 999});
  ASSERT_TRUE(stop.ok()) << stop.status();
  EXPECT_EQ(*stop, std::vector<int64_t>{999});
}

TEST_F(LeasesSeamTest, EveryEndOfALeaseTellsItsStudy) {
  leases_->OpenStudy(study_, Cpu());
  const int64_t trial = QueueTrial();
  ASSERT_TRUE(leases_->LeaseTrial("a1").ok());
  EXPECT_TRUE(desk_.changed().empty());
  ASSERT_TRUE(leases_
                  ->ReleaseTrial("a1", trial, "the node rebooted",
                                 /*infrastructure_failure=*/true)
                  .ok());
  EXPECT_EQ(desk_.changed(), std::vector<int64_t>{study_});
  EXPECT_EQ(State(trial), db::TrialState::kQueued);
  // A report that does not parse is refused before anything changes.
  ASSERT_TRUE(leases_->LeaseTrial("a1").ok());
  EXPECT_FALSE(leases_->ReportTrial("a1", trial, "{not json").ok());
  EXPECT_EQ(desk_.changed().size(), 1u);
  // A report too large to read is stored as invalid, and told.
  const absl::Status big =
      leases_->ReportTrial("a1", trial, std::string(2 << 20, ' '));
  EXPECT_EQ(big.code(), absl::StatusCode::kInvalidArgument) << big;
  EXPECT_EQ(State(trial), db::TrialState::kInvalid);
  EXPECT_EQ(desk_.changed(), (std::vector<int64_t>{study_, study_}));
}

TEST_F(LeasesSeamTest, TheReaperTellsTheStudiesOfLostAgentsAndTicks) {
  leases_->OpenStudy(study_, Cpu());
  const int64_t trial = QueueTrial();
  ASSERT_TRUE(leases_->LeaseTrial("a1").ok());
  leases_->Reap();
  EXPECT_TRUE(desk_.lost().empty());
  EXPECT_TRUE(desk_.changed().empty());
  ASSERT_EQ(desk_.ticks().size(), 1u);
  Advance(absl::Seconds(31));
  leases_->Reap();
  EXPECT_EQ(desk_.lost(), std::vector<std::string>{"a1"});
  EXPECT_EQ(desk_.lost_after(), absl::Seconds(30));
  EXPECT_EQ(desk_.changed(), std::vector<int64_t>{study_});
  ASSERT_EQ(desk_.ticks().size(), 2u);
  EXPECT_EQ(desk_.ticks().back(), Now());
  EXPECT_EQ(State(trial), db::TrialState::kQueued);
}

TEST_F(LeasesSeamTest, AgentsArrivingTellTheStudies) {
  const int before = desk_.agents_changed();  // a1's registration
  EXPECT_EQ(before, 1);
  db::Probe gemm;
  gemm.kind = "gemm";
  gemm.value = 100;
  gemm.unit = "GFLOP/s";
  ASSERT_TRUE(leases_->ReportProbes("a1", {gemm}).ok());
  EXPECT_EQ(desk_.agents_changed(), 2);
  EXPECT_FALSE(leases_->ReportProbes("", {gemm}).ok());
  EXPECT_EQ(desk_.agents_changed(), 2);
}

}  // namespace
}  // namespace tessera::service

namespace tessera::service {
namespace {

// Heartbeats extend leases in memory (agent_liveness.h): nothing is written
// until the reaper's pass, which writes them before it expires anything.
TEST_F(LeasesSeamTest, HeartbeatsExtendLeasesInMemoryAndTheReaperWritesFirst) {
  leases_->OpenStudy(study_, Cpu());
  const int64_t trial = QueueTrial();
  const absl::Time t0 = Now();
  ASSERT_TRUE(leases_->LeaseTrial("a1").ok());
  ASSERT_EQ(State(trial), db::TrialState::kLeased);
  desk_.SetActive({study_});
  const int64_t writes = store_->writes();
  Advance(absl::Seconds(8));
  absl::StatusOr<std::vector<int64_t>> stop = leases_->Heartbeat("a1", {trial});
  ASSERT_TRUE(stop.ok()) << stop.status();
  EXPECT_TRUE(stop->empty());
  EXPECT_EQ(store_->writes(), writes) << "a heartbeat wrote the store";
  EXPECT_EQ(store_->GetTrial(trial)->lease_expires_at, t0 + absl::Seconds(10));
  // Past the written expiry, not the heartbeat's: the pass writes first.
  Advance(absl::Seconds(8));
  leases_->Reap();
  EXPECT_EQ(State(trial), db::TrialState::kLeased);
  EXPECT_EQ(store_->GetTrial(trial)->lease_expires_at, t0 + absl::Seconds(18));
  EXPECT_EQ(store_->GetAgent("a1")->last_heartbeat_at, t0 + absl::Seconds(8));
  // No heartbeat since: it expires.
  Advance(absl::Seconds(3));
  leases_->Reap();
  EXPECT_EQ(State(trial), db::TrialState::kQueued);
}

}  // namespace
}  // namespace tessera::service
