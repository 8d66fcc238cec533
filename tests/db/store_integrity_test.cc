// The store's file as the review found it wanting: created readable by
// everyone (now 0600), a damaged page served without complaint (now refused
// at open), no way to back it up while the planner runs (now BackupStore,
// restorable by copying the file back).
#include <sqlite3.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "db/store_backup.h"
#include "gtest/gtest.h"
#include "tests/db/test_util.h"

namespace tessera::db::testing {
namespace {

namespace fs = std::filesystem;

mode_t ModeOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// A store with one study and `trials` queued trials.
int64_t Fill(SqliteTrialStore& store, int trials) {
  absl::StatusOr<Study> study = store.CreateStudy(SampleStudy());
  EXPECT_TRUE(study.ok()) << study.status();
  std::vector<NewTrial> batch(trials, SampleTrial());
  EXPECT_TRUE(store.AddTrials(study->id, batch).ok());
  return study->id;
}

TEST(StoreIntegrityTest, TheStoreAndItsWalAreTheOwnersAlone) {
  TempDir dir;
  ManualClock clock;
  const mode_t old_umask = ::umask(022);  // what a default shell has
  auto store = OpenStore(dir.File("t.db"), clock);
  Fill(*store, 3);
  ::umask(old_umask);
  EXPECT_EQ(ModeOf(dir.File("t.db")), 0600u);
  ASSERT_TRUE(fs::exists(dir.File("t.db-wal")));
  EXPECT_EQ(ModeOf(dir.File("t.db-wal")), 0600u);
}

// Overwrites `bytes` bytes of the file at `offset` with garbage (a bad disk
// block).
void Damage(const std::string& path, int64_t offset, int64_t bytes) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f.good());
  f.seekp(offset);
  const std::string junk(static_cast<size_t>(bytes), '\xA5');
  f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
}

// Opening the store at `path` is refused as damaged, naming the file and
// what to do.
void ExpectRefusedAsDamaged(const std::string& path) {
  absl::StatusOr<std::unique_ptr<SqliteTrialStore>> reopened =
      SqliteTrialStore::Open(path, SqliteTrialStoreOptions{});
  ASSERT_FALSE(reopened.ok());
  EXPECT_EQ(reopened.status().code(), absl::StatusCode::kDataLoss)
      << reopened.status();
  EXPECT_NE(reopened.status().message().find(path + " is damaged"),
            std::string::npos)
      << reopened.status();
  EXPECT_NE(reopened.status().message().find("Restore a backup"),
            std::string::npos)
      << reopened.status();
}

TEST(StoreIntegrityTest, ADamagedFileIsRefusedAtOpenNamingIt) {
  TempDir dir;
  ManualClock clock;
  const std::string path = dir.File("t.db");
  {
    auto store = OpenStore(path, clock);
    Fill(*store, 200);  // several pages of trials
  }                     // closed: the WAL is checkpointed into the file
  // Two whole pages in the middle of the file overwritten: neither is a
  // valid b-tree page any more.
  const int64_t pages = static_cast<int64_t>(fs::file_size(path)) / 4096;
  ASSERT_GE(pages, 6) << "the store is too small to damage in the middle";
  Damage(path, (pages / 2) * 4096, 2 * 4096);
  ExpectRefusedAsDamaged(path);
}

// Damage to the schema's own page (page 1, past the file header) shows when
// the file is opened, before any check runs: refused the same way, naming
// the file, not as a bare SQLite error.
TEST(StoreIntegrityTest, ADamagedSchemaPageIsRefusedAtOpenNamingIt) {
  TempDir dir;
  ManualClock clock;
  const std::string path = dir.File("t.db");
  {
    auto store = OpenStore(path, clock);
    Fill(*store, 3);
  }
  // The 100-byte file header stays; the b-tree page after it does not.
  Damage(path, 100, 4096 - 100);
  ExpectRefusedAsDamaged(path);
}

// Runs `sql` on the file behind the store's back (what an editor of the
// file, or a bad sector that still parses, does).
void EditBehindTheStore(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error != nullptr ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

// Issue 28: a changed digit inside a stored record (3101 -> 9101 tokens/s)
// passed the integrity check and was served. Each result now carries a
// checksum that the check at open verifies.
TEST(StoreIntegrityTest, AChangedValueInAStoredResultIsRefusedAtOpen) {
  TempDir dir;
  ManualClock clock;
  const std::string path = dir.File("t.db");
  int64_t trial = 0;
  {
    auto store = OpenStore(path, clock);
    const int64_t study = Fill(*store, 2);
    absl::StatusOr<std::vector<Trial>> trials = store->ListTrials({});
    ASSERT_TRUE(trials.ok() && !trials->empty());
    trial = trials->front().id;
    (void)study;
    ASSERT_TRUE(store->UpsertAgent(SampleAgent("a")).ok());
    ASSERT_TRUE(store->LeaseTrial(trial, {"a"}, clock.Now() + absl::Hours(1))
                    .ok());
    TrialResult r = SampleResult();
    r.tokens_per_s = 3101;
    ASSERT_TRUE(store->ReportTrial(trial, "a", r, clock.Now()).ok());
    ASSERT_TRUE(store->InvalidateTrial(trial, "throttled GPU").ok());
  }
  // Untouched, it opens (the invalidation re-sealed the row).
  ASSERT_TRUE(SqliteTrialStore::Open(path, SqliteTrialStoreOptions{}).ok());
  for (const std::string& edit :
       {absl::StrCat("UPDATE trials SET tokens_per_s = 9101 WHERE id = ",
                     trial),
        absl::StrCat("UPDATE trials SET result_json = replace(result_json, "
                     "'3101', '9101') WHERE id = ",
                     trial),
        absl::StrCat("UPDATE trials SET status = 'ok' WHERE id = ", trial)}) {
    const std::string copy = dir.File("edited.db");
    fs::copy_file(path, copy, fs::copy_options::overwrite_existing);
    EditBehindTheStore(copy, edit);
    absl::StatusOr<std::unique_ptr<SqliteTrialStore>> reopened =
        SqliteTrialStore::Open(copy, SqliteTrialStoreOptions{});
    ASSERT_FALSE(reopened.ok()) << edit;
    EXPECT_EQ(reopened.status().code(), absl::StatusCode::kDataLoss) << edit;
    EXPECT_NE(reopened.status().message().find(absl::StrCat(
                  "the stored result of trial ", trial,
                  " does not match its checksum")),
              std::string::npos)
        << reopened.status();
    fs::remove(copy);
    fs::remove(copy + "-wal");
    fs::remove(copy + "-shm");
  }
  // A result stored before checksums existed (NULL) is sealed at the next
  // open, and checked from then on.
  EditBehindTheStore(path, "UPDATE trials SET result_checksum = NULL");
  ASSERT_TRUE(SqliteTrialStore::Open(path, SqliteTrialStoreOptions{}).ok());
  EditBehindTheStore(path, absl::StrCat("UPDATE trials SET tokens_per_s = 1 "
                                        "WHERE id = ",
                                        trial));
  EXPECT_EQ(SqliteTrialStore::Open(path, SqliteTrialStoreOptions{})
                .status()
                .code(),
            absl::StatusCode::kDataLoss);
}

TEST(StoreIntegrityTest, ABackupWhileWritingIsAConsistentRestorableStore) {
  TempDir dir;
  ManualClock clock;
  const std::string path = dir.File("t.db");
  auto store = OpenStore(path, clock);
  const int64_t study = Fill(*store, 10);
  // A writer keeps adding trials while the backup runs.
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    while (!stop) {
      std::vector<NewTrial> one(1, SampleTrial());
      EXPECT_TRUE(store->AddTrials(study, one).ok());
    }
  });
  const absl::Status backed_up = BackupStore(path, dir.File("backup.db"));
  stop = true;
  writer.join();
  ASSERT_TRUE(backed_up.ok()) << backed_up;
  EXPECT_EQ(ModeOf(dir.File("backup.db")), 0600u);

  // Restored (a copy put where a store is opened): it opens, and holds the
  // study with at least the 10 trials there before the backup began.
  fs::copy_file(dir.File("backup.db"), dir.File("restored.db"));
  auto restored = OpenStore(dir.File("restored.db"), clock);
  absl::StatusOr<std::vector<Trial>> trials =
      restored->ListTrials(TrialFilter{.study_id = study});
  ASSERT_TRUE(trials.ok()) << trials.status();
  EXPECT_GE(trials->size(), 10u);

  // A backup never overwrites, and needs a store to copy.
  const absl::Status again = BackupStore(path, dir.File("backup.db"));
  EXPECT_EQ(again.code(), absl::StatusCode::kInvalidArgument) << again;
  EXPECT_EQ(BackupStore(dir.File("none.db"), dir.File("b2.db")).code(),
            absl::StatusCode::kNotFound);
  EXPECT_FALSE(fs::exists(dir.File("b2.db")));
}

// The review: a corrupt WAL silently rolled back two finished trials.
// SQLite replays the log up to the first frame that fails its checksum and
// drops every frame after it, committed or not; the store refuses to open
// on such a log, names it, and accepts a torn tail (the transaction being
// written at the crash, never committed).
TEST(StoreIntegrityTest, ADamagedWriteAheadLogIsRefusedATornTailIsNot) {
  TempDir dir;
  ManualClock clock;
  const std::string path = dir.File("t.db");
  auto store = OpenStore(path, clock);
  const int64_t study = Fill(*store, 3);
  for (int i = 0; i < 6; ++i) {  // six more commits in the log
    std::vector<NewTrial> one(1, SampleTrial());
    ASSERT_TRUE(store->AddTrials(study, one).ok());
  }
  // The files as a crash leaves them: the log not checkpointed.
  const auto Crash = [&](const std::string& name) {
    fs::copy_file(path, dir.File(name));
    fs::copy_file(path + "-wal", dir.File(name + "-wal"));
    return dir.File(name);
  };
  const std::string intact = Crash("intact.db");
  const std::string damaged = Crash("damaged.db");
  const std::string torn = Crash("torn.db");
  const std::string unchecked = Crash("unchecked.db");
  const int64_t wal_bytes = static_cast<int64_t>(fs::file_size(path + "-wal"));
  const int64_t frame_bytes = 24 + 4096;
  ASSERT_GE((wal_bytes - 32) / frame_bytes, 8) << "too few frames in the log";
  // One byte of the second frame's page flipped (a bad disk block).
  for (const std::string& p : {damaged, unchecked}) {
    std::fstream f(p + "-wal", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(32 + frame_bytes + 24 + 100);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x40);
    f.seekp(32 + frame_bytes + 24 + 100);
    f.write(&c, 1);
  }
  // The last frame half written.
  fs::resize_file(torn + "-wal",
                  static_cast<uintmax_t>(wal_bytes - frame_bytes / 2));

  const auto Trials = [&](const std::string& p,
                          SqliteTrialStoreOptions options) -> int64_t {
    absl::StatusOr<std::unique_ptr<SqliteTrialStore>> s =
        SqliteTrialStore::Open(p, options);
    if (!s.ok()) return -1;
    absl::StatusOr<std::vector<Trial>> t =
        (*s)->ListTrials(TrialFilter{.study_id = study});
    return t.ok() ? static_cast<int64_t>(t->size()) : -1;
  };
  EXPECT_EQ(Trials(intact, {}), 9);
  EXPECT_GE(Trials(torn, {}), 3);

  absl::StatusOr<std::unique_ptr<SqliteTrialStore>> refused =
      SqliteTrialStore::Open(damaged, SqliteTrialStoreOptions{});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(
      refused.status().message().find(damaged + "-wal is damaged: frame 2 of "),
      std::string::npos)
      << refused.status();
  EXPECT_NE(refused.status().message().find("committed transaction(s) after "
                                            "it would be dropped"),
            std::string::npos)
      << refused.status();
  // What SQLite does unchecked: it opens, with committed trials gone.
  SqliteTrialStoreOptions no_check;
  no_check.check_integrity = false;
  EXPECT_LT(Trials(unchecked, no_check), 9);
}

}  // namespace
}  // namespace tessera::db::testing
