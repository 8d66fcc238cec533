// Helpers of the db/ tests: a per-test temporary directory, a clock the test
// drives, sample records, and a full dump of a database file (to check that a
// failed operation wrote nothing).
//
//   TempDir dir;
//   ManualClock clock;
//   auto store = OpenStore(dir.File("t.db"), clock);
//   const std::string before = DumpDatabase(dir.File("t.db"));
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/trial_result.h"
#include "db/sqlite_trial_store.h"
#include "db/trial_store.h"
#include "gtest/gtest.h"

namespace tessera::db::testing {

// A fresh directory under the system temp dir, removed with its files.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // The path of `name` inside the directory.
  std::string File(absl::string_view name) const;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A clock that moves only when told; safe to read from several threads.
class ManualClock {
 public:
  absl::Time Now() const;
  void Advance(absl::Duration d);
  void Set(absl::Time t);
  // A Clock for the store; reads this object, which must outlive it.
  Clock AsClock() const;

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_) = absl::FromUnixSeconds(1'700'000'000);
};

// Opens a store on `path` driven by `clock`; fails the test on error.
std::unique_ptr<SqliteTrialStore> OpenStore(
    const std::string& path, const ManualClock& clock, int64_t max_attempts = 3,
    Synchronous synchronous = Synchronous::kFull);

NewStudy SampleStudy(absl::string_view name = "llama-7b on 2x8 H100",
                     absl::string_view model = "llama2-7b",
                     absl::string_view gpu = "H100-SXM");
// A resolved layout on 16 GPUs with `tp` and `pp`.
NewTrial SampleTrial(int64_t tp = 2, int64_t pp = 1, int64_t gang_size = 1);
// A complete result whose every metric derives from `seed`, with `steps`
// per-step losses and step times.
TrialResult SampleResult(TrialStatus status = TrialStatus::kOk,
                         double seed = 1.0, int64_t steps = 12);
AgentRegistration SampleAgent(absl::string_view id);

// Every row of every table of the database at `path` as sorted text lines
// (read through a connection of its own).
std::string DumpDatabase(const std::string& path);
// Rows of `table` in the database at `path`.
int64_t CountRows(const std::string& path, absl::string_view table);

// A value of T made by `set` from T's defaults (a designated initializer
// that leaves fields out draws -Wmissing-field-initializers):
//   ListProbes(With<ProbeFilter>([](auto& f) { f.kind = "gemm"; }))
template <typename T, typename Set>
T With(Set set) {
  T value{};
  set(value);
  return value;
}

// A test with a fresh store on a file of its own, driven by a manual clock.
// Its commits skip the fsync (synchronous=NORMAL) to keep the suite fast;
// the durability, concurrency and crash tests use the default (FULL).
class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override;
  // Runs `op`, expects `code` with `text` in its message, and that the
  // database is byte for byte (row for row) what it was before.
  void ExpectErrorWritesNothing(const std::function<absl::Status()>& op,
                                absl::StatusCode code, absl::string_view text);
  // A new study (fails the test on error).
  int64_t MakeStudy(const NewStudy& study = SampleStudy());
  // Adds trials to `study_id` and returns their ids.
  std::vector<int64_t> MakeTrials(int64_t study_id,
                                  const std::vector<NewTrial>& trials);
  // Registers an agent with id `id`.
  void Register(absl::string_view id);
  Trial GetTrialOrDie(int64_t trial_id);

  TempDir dir_;
  ManualClock clock_;
  std::string path_;
  int64_t max_attempts_ = 3;  // set before SetUp to change
  std::unique_ptr<SqliteTrialStore> store_;
};

}  // namespace tessera::db::testing
