#include "tests/db/test_util.h"

#include <stdlib.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "db/sqlite.h"

namespace tessera::db::testing {

TempDir::TempDir() {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "tessera_db_XXXXXX").string();
  char* made = mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr) << "mkdtemp " << pattern;
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::File(absl::string_view name) const {
  return (path_ / std::string(name)).string();
}

absl::Time ManualClock::Now() const {
  absl::MutexLock lock(&mu_);
  return now_;
}

void ManualClock::Advance(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  now_ += d;
}

void ManualClock::Set(absl::Time t) {
  absl::MutexLock lock(&mu_);
  now_ = t;
}

Clock ManualClock::AsClock() const {
  return [this] { return Now(); };
}

std::unique_ptr<SqliteTrialStore> OpenStore(const std::string& path,
                                            const ManualClock& clock,
                                            int64_t max_attempts,
                                            Synchronous synchronous) {
  SqliteTrialStoreOptions options;
  options.database.synchronous = synchronous;
  options.clock = clock.AsClock();
  options.max_attempts = max_attempts;
  absl::StatusOr<std::unique_ptr<SqliteTrialStore>> store =
      SqliteTrialStore::Open(path, options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(*store) : nullptr;
}

NewStudy SampleStudy(absl::string_view name, absl::string_view model,
                     absl::string_view gpu) {
  NewStudy s;
  s.name = std::string(name);
  s.spec_json =
      R"({"model": {"preset": "llama2-7b"}, "cluster": {"nodes": 2}})";
  s.model = std::string(model);
  s.gpu = std::string(gpu);
  s.nodes = 2;
  s.gpus_per_node = 8;
  s.trial_budget = 40;
  s.time_budget_s = 3600;
  return s;
}

NewTrial SampleTrial(int64_t tp, int64_t pp, int64_t gang_size) {
  NewTrial t;
  t.layout.tp = tp;
  t.layout.pp = pp;
  t.layout.dp = 16 / (tp * pp);
  t.layout.zero = 1;
  t.layout.micro_batch = 1;
  t.layout.grad_accum = 4;
  t.steps = 20;
  t.warmup_steps = 5;
  t.gang_size = gang_size;
  t.predicted = TrialPrediction{1000.0 * tp, 2.5, 0.5 * pp, 40'000'000'000};
  return t;
}

TrialResult SampleResult(TrialStatus status, double seed, int64_t steps) {
  TrialResult r;
  r.status = status;
  r.reason = status == TrialStatus::kOk ? "" : "it broke";
  r.layout.tp = 2;
  r.layout.dp = 8;
  r.layout.grad_accum = 4;
  r.backend = "cpu";
  r.model = "tiny";
  r.device = "cpu (4 threads)";
  r.ranks = 16;
  r.global_batch = 32;
  r.seq_len = 128;
  r.warmup_steps = 2;
  r.steps = steps - 2;
  r.step_time_s = {0.5 * seed, 0.4 * seed, 0.7 * seed};
  r.tokens_per_s = 8192 / seed;
  r.tokens_per_s_per_gpu = 512 / seed;
  r.tflops_per_gpu = 0.01 * seed;
  r.mfu = 0.2 * seed;
  r.peak_tflops = 0.05;
  r.peak_tflops_source = "measured sgemm";
  r.peak_memory_bytes = {100, 300, 200};
  r.compute_s = 0.3 * seed;
  r.comm_s = 0.2 * seed;
  r.exposed_comm_s = 0.1 * seed;
  r.watts_per_gpu = 650 * seed;
  r.tokens_per_joule = 1.5 / seed;
  for (int64_t i = 0; i < steps; ++i) {
    r.loss.push_back(6.0 * seed - 0.01 * i);
    r.step_times_s.push_back(0.5 * seed + 0.001 * i);
  }
  return r;
}

AgentRegistration SampleAgent(absl::string_view id) {
  AgentRegistration a;
  a.id = std::string(id);
  a.hostname = absl::StrCat("host-", id);
  a.backend = "cuda";
  a.gpu_name = "NVIDIA H100 80GB HBM3";
  a.gpu_count = 8;
  a.memory_bytes = 85'899'345'920;
  a.driver = "550.54";
  a.interconnect = "nvlink";
  a.address = absl::StrCat("10.0.0.", id.size(), ":7070");
  return a;
}

std::string DumpDatabase(const std::string& path) {
  auto db = Database::Open(path, DatabaseOptions{});
  EXPECT_TRUE(db.ok()) << db.status();
  if (!db.ok()) return "";
  std::vector<std::string> tables;
  {
    auto select = (*db)->Prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
    EXPECT_TRUE(select.ok()) << select.status();
    while (select.ok() && *select->Step())
      tables.push_back(select->ColumnText(0));
  }
  std::vector<std::string> lines;
  for (const std::string& table : tables) {
    auto select = (*db)->Prepare(absl::StrCat("SELECT * FROM \"", table, "\""));
    EXPECT_TRUE(select.ok()) << select.status();
    while (select.ok() && *select->Step()) {
      std::vector<std::string> values;
      for (int c = 0; c < select->ColumnCount(); ++c) {
        values.push_back(select->ColumnIsNull(c) ? "NULL"
                                                 : select->ColumnText(c));
      }
      lines.push_back(absl::StrCat(table, ": ", absl::StrJoin(values, " | ")));
    }
  }
  std::sort(lines.begin(), lines.end());
  return absl::StrJoin(lines, "\n");
}

int64_t CountRows(const std::string& path, absl::string_view table) {
  auto db = Database::Open(path, DatabaseOptions{});
  EXPECT_TRUE(db.ok()) << db.status();
  if (!db.ok()) return -1;
  auto count = (*db)->QueryInt(absl::StrCat("SELECT count(*) FROM ", table));
  EXPECT_TRUE(count.ok()) << count.status();
  return count.ok() ? *count : -1;
}

void StoreTest::SetUp() {
  path_ = dir_.File("store.db");
  store_ = OpenStore(path_, clock_, max_attempts_, Synchronous::kNormal);
  ASSERT_NE(store_, nullptr);
}

void StoreTest::ExpectErrorWritesNothing(
    const std::function<absl::Status()>& op, absl::StatusCode code,
    absl::string_view text) {
  const std::string before = DumpDatabase(path_);
  const absl::Status s = op();
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), text))
      << "'" << text << "' not in: " << s;
  EXPECT_EQ(DumpDatabase(path_), before) << "after: " << s;
}

int64_t StoreTest::MakeStudy(const NewStudy& study) {
  absl::StatusOr<Study> s = store_->CreateStudy(study);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? s->id : -1;
}

std::vector<int64_t> StoreTest::MakeTrials(
    int64_t study_id, const std::vector<NewTrial>& trials) {
  absl::StatusOr<std::vector<int64_t>> ids =
      store_->AddTrials(study_id, trials);
  EXPECT_TRUE(ids.ok()) << ids.status();
  return ids.ok() ? *ids : std::vector<int64_t>{};
}

void StoreTest::Register(absl::string_view id) {
  absl::StatusOr<Agent> a = store_->UpsertAgent(SampleAgent(id));
  EXPECT_TRUE(a.ok()) << a.status();
}

Trial StoreTest::GetTrialOrDie(int64_t trial_id) {
  absl::StatusOr<Trial> t = store_->GetTrial(trial_id);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : Trial{};
}

}  // namespace tessera::db::testing
