// The versioned schema: embedding, first application, re-opening, refusing a
// newer database, and a failing migration that leaves the previous version.
#include "db/migrations.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/db/test_util.h"

namespace tessera::db {
namespace {

using ::tessera::db::testing::DumpDatabase;
using ::tessera::db::testing::TempDir;

std::unique_ptr<Database> OpenOrDie(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Database>> db =
      Database::Open(path, DatabaseOptions{});
  EXPECT_TRUE(db.ok()) << db.status();
  return db.ok() ? std::move(*db) : nullptr;
}

bool HasTable(Database& db, absl::string_view table) {
  auto s = db.Prepare(
      "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?");
  EXPECT_TRUE(s.ok());
  s->BindText(1, table);
  EXPECT_TRUE(*s->Step());
  return s->ColumnInt(0) == 1;
}

TEST(MigrationsTest, EmbeddedMigrationsAreTheSqlFilesInVersionOrder) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(TESSERA_DB_MIGRATIONS_DIR)) {
    if (entry.path().extension() == ".sql") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  const std::vector<Migration>& embedded = EmbeddedMigrations();
  ASSERT_EQ(embedded.size(), files.size());
  ASSERT_FALSE(embedded.empty());
  EXPECT_EQ(embedded[0].version, 1);
  EXPECT_EQ(embedded[0].name, "0001_initial");
  for (size_t i = 0; i < files.size(); ++i) {
    std::ifstream in(files[i]);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(embedded[i].name, files[i].stem().string());
    EXPECT_EQ(embedded[i].sql, text.str()) << files[i];
    if (i > 0) {
      EXPECT_GT(embedded[i].version, embedded[i - 1].version);
    }
  }
}

TEST(MigrationsTest, FreshFileGetsTheWholeSchema) {
  TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  ASSERT_EQ(*SchemaVersion(*db), 0);
  ASSERT_TRUE(ApplyMigrations(*db, EmbeddedMigrations()).ok());
  const int64_t last = EmbeddedMigrations().back().version;
  EXPECT_EQ(*SchemaVersion(*db), last);
  EXPECT_EQ(*db->QueryInt("PRAGMA user_version"), last);
  EXPECT_EQ(*db->QueryInt("SELECT count(*) FROM schema_migrations"),
            static_cast<int64_t>(EmbeddedMigrations().size()));
  for (const char* table :
       {"studies", "trials", "trial_metrics", "trial_leases", "agents",
        "probes", "calibrations"}) {
    EXPECT_TRUE(HasTable(*db, table)) << table;
  }
  // The schema's own rules hold: a trial needs a study (foreign keys on).
  EXPECT_EQ(
      db->Exec("INSERT INTO trial_metrics VALUES (99, 0, 1.0, 1.0)").code(),
      absl::StatusCode::kFailedPrecondition);
}

TEST(MigrationsTest, ReopeningAnUpToDateDatabaseChangesNothing) {
  TempDir dir;
  const std::string path = dir.File("a.db");
  {
    auto db = OpenOrDie(path);
    ASSERT_TRUE(ApplyMigrations(*db, EmbeddedMigrations()).ok());
  }
  const std::string before = DumpDatabase(path);
  ASSERT_TRUE(absl::StrContains(before, "schema_migrations: 1 | 0001_initial"));
  for (int i = 0; i < 2; ++i) {
    auto db = OpenOrDie(path);
    ASSERT_TRUE(ApplyMigrations(*db, EmbeddedMigrations()).ok());
  }
  EXPECT_EQ(DumpDatabase(path), before);  // applied_at_us included
}

TEST(MigrationsTest, OnlyTheMissingMigrationsRunInOrder) {
  TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  std::vector<Migration> v1 = {{1, "0001_a", "CREATE TABLE a (x);"}};
  ASSERT_TRUE(ApplyMigrations(*db, v1).ok());
  ASSERT_TRUE(db->Exec("INSERT INTO a VALUES (7)").ok());
  // Version 1 would fail if it ran again (CREATE TABLE a exists).
  std::vector<Migration> v3 = v1;
  v3.push_back({2, "0002_b", "CREATE TABLE b (y); INSERT INTO b VALUES (1);"});
  v3.push_back({3, "0003_c", "ALTER TABLE a ADD COLUMN z INTEGER DEFAULT 5;"});
  absl::Status s = ApplyMigrations(*db, v3);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(*SchemaVersion(*db), 3);
  EXPECT_EQ(*db->QueryInt("SELECT x + z FROM a"), 12);
  EXPECT_EQ(*db->QueryInt("SELECT count(*) FROM b"), 1);
}

// A database made by an older build (schema version 1, with data) is brought
// up to date by the store's Open, and its data keeps working.
TEST(MigrationsTest, StoreUpgradesAnOlderDatabase) {
  TempDir dir;
  const std::string path = dir.File("old.db");
  ASSERT_GE(EmbeddedMigrations().size(), 2u);
  {
    auto db = OpenOrDie(path);
    ASSERT_TRUE(ApplyMigrations(*db, {EmbeddedMigrations()[0]}).ok());
    ASSERT_TRUE(
        db->Exec("INSERT INTO agents (id, hostname, backend, gpu_count, "
                 "memory_bytes, state, registered_at_us, "
                 "last_heartbeat_at_us) VALUES ('old', 'h', 'cpu', 0, "
                 "0, 'active', 0, 0)")
            .ok());
  }
  absl::StatusOr<std::unique_ptr<SqliteTrialStore>> store =
      SqliteTrialStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<Agent> old = (*store)->GetAgent("old");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->info.address, "");  // the new column's default
  AgentRegistration again = old->info;
  again.address = "10.1.1.1:1";
  ASSERT_TRUE((*store)->UpsertAgent(again).ok());
  EXPECT_EQ((*store)->GetAgent("old")->info.address, "10.1.1.1:1");
  auto db = OpenOrDie(path);
  EXPECT_EQ(*SchemaVersion(*db), EmbeddedMigrations().back().version);
}

// 0005 rebuilds the agents table to admit command agents: an agent that a
// trial's lease and report refer to keeps every field, the references hold,
// and the old CHECK's rejection of other backends is gone for "command" only.
TEST(MigrationsTest, CommandAgentsAreAdmittedAndReferencedAgentsKept) {
  TempDir dir;
  const std::string path = dir.File("v4.db");
  std::vector<Migration> upto4;
  for (const Migration& m : EmbeddedMigrations()) {
    if (m.version <= 4) upto4.push_back(m);
  }
  ASSERT_EQ(upto4.size(), 4u);
  {
    auto db = OpenOrDie(path);
    ASSERT_TRUE(ApplyMigrations(*db, upto4).ok());
    ASSERT_TRUE(db->Exec("PRAGMA foreign_keys = ON").ok());
    ASSERT_TRUE(
        db->Exec("INSERT INTO agents (id, hostname, backend, gpu_count, "
                 "memory_bytes, state, registered_at_us, "
                 "last_heartbeat_at_us, address) VALUES ('gpu-1', 'h', "
                 "'cuda', 8, 80, 'active', 1, 2, '10.0.0.1')")
            .ok());
    EXPECT_FALSE(
        db->Exec("INSERT INTO agents (id, hostname, backend, gpu_count, "
                 "memory_bytes, state, registered_at_us, "
                 "last_heartbeat_at_us) VALUES ('c', 'h', 'command', 1, 1, "
                 "'active', 0, 0)")
            .ok());
    ASSERT_TRUE(db->Exec("INSERT INTO probes (agent_id, kind, group_size, "
                         "bytes, value, unit, measured_at_us) VALUES "
                         "('gpu-1', 'gemm_bf16', 1, 0, 700, 'TFLOP/s', 3)")
                    .ok());
  }
  absl::StatusOr<std::unique_ptr<SqliteTrialStore>> store =
      SqliteTrialStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<Agent> kept = (*store)->GetAgent("gpu-1");
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->info.backend, "cuda");
  EXPECT_EQ(kept->info.gpu_count, 8);
  EXPECT_EQ(kept->info.address, "10.0.0.1");
  AgentRegistration command = kept->info;
  command.id = "cmd-1";
  command.backend = "command";
  ASSERT_TRUE((*store)->UpsertAgent(command).ok());
  EXPECT_EQ((*store)->GetAgent("cmd-1")->info.backend, "command");
  auto db = OpenOrDie(path);
  EXPECT_EQ(*db->QueryInt("SELECT count(*) FROM probes WHERE agent_id = "
                          "'gpu-1'"),
            1);
  EXPECT_EQ(*db->QueryInt("SELECT count(*) FROM pragma_foreign_key_check"),
            0);
  EXPECT_EQ(*db->QueryInt("SELECT count(*) FROM sqlite_master WHERE name = "
                          "'agents_by_heartbeat'"),
            1);
}

TEST(MigrationsTest, NewerDatabaseIsRefused) {
  TempDir dir;
  const std::string path = dir.File("a.db");
  {
    auto db = OpenOrDie(path);
    ASSERT_TRUE(ApplyMigrations(*db, EmbeddedMigrations()).ok());
    ASSERT_TRUE(db->Exec("INSERT INTO schema_migrations VALUES "
                         "(9999, '9999_from_the_future', 0)")
                    .ok());
  }
  const std::string before = DumpDatabase(path);
  auto db = OpenOrDie(path);
  absl::Status s = ApplyMigrations(*db, EmbeddedMigrations());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "9999")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "newer")) << s;
  // The store refuses it the same way at Open.
  absl::StatusOr<std::unique_ptr<SqliteTrialStore>> store =
      SqliteTrialStore::Open(path);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(DumpDatabase(path), before);
}

// A store opened read-only (the history commands' --db) reads a current
// store and writes nothing: no file is created, an older schema is not
// migrated, a non-Tessera database is named as such, and writes fail.
TEST(MigrationsTest, ReadOnlyStoreNeitherCreatesNorMigratesNorWrites) {
  TempDir dir;
  SqliteTrialStoreOptions read_only;
  read_only.read_only = true;

  const std::string missing = dir.File("missing.db");
  EXPECT_FALSE(SqliteTrialStore::Open(missing, read_only).ok());
  EXPECT_FALSE(std::filesystem::exists(missing));

  const std::string old = dir.File("old.db");
  {
    auto db = OpenOrDie(old);
    ASSERT_TRUE(ApplyMigrations(*db, {EmbeddedMigrations()[0]}).ok());
  }
  const std::string old_before = DumpDatabase(old);
  absl::StatusOr<std::unique_ptr<SqliteTrialStore>> store =
      SqliteTrialStore::Open(old, read_only);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(store.status().message(),
                                "open it once with tessera-planner"))
      << store.status();
  EXPECT_EQ(DumpDatabase(old), old_before);

  const std::string other = dir.File("other.db");
  {
    auto db = OpenOrDie(other);
    ASSERT_TRUE(db->Exec("CREATE TABLE t (x INTEGER)").ok());
  }
  store = SqliteTrialStore::Open(other, read_only);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(store.status().message(),
                                "is not a Tessera store"))
      << store.status();
  auto db = OpenOrDie(other);
  EXPECT_FALSE(HasTable(*db, "schema_migrations"));

  const std::string current = dir.File("current.db");
  {
    absl::StatusOr<std::unique_ptr<SqliteTrialStore>> writer =
        SqliteTrialStore::Open(current);
    ASSERT_TRUE(writer.ok()) << writer.status();
    NewStudy study;
    study.name = "kept";
    study.spec_json = "{}";
    study.model = "tiny";
    study.gpu = "h100-sxm";
    study.nodes = 1;
    study.gpus_per_node = 8;
    ASSERT_TRUE((*writer)->CreateStudy(study).ok());
  }
  const std::string before = DumpDatabase(current);
  store = SqliteTrialStore::Open(current, read_only);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::vector<Study>> studies = (*store)->ListStudies({});
  ASSERT_TRUE(studies.ok()) << studies.status();
  ASSERT_EQ(studies->size(), 1u);
  EXPECT_EQ(studies->front().name, "kept");
  NewStudy another;
  another.name = "refused";
  another.spec_json = "{}";
  another.model = "tiny";
  another.gpu = "h100-sxm";
  another.nodes = 1;
  another.gpus_per_node = 8;
  EXPECT_FALSE((*store)->CreateStudy(another).ok());
  store->reset();
  EXPECT_EQ(DumpDatabase(current), before);
}

TEST(MigrationsTest, FailingMigrationLeavesThePreviousVersion) {
  TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  std::vector<Migration> migrations = {
      {1, "0001_a", "CREATE TABLE a (x);"},
      {2, "0002_bad", "CREATE TABLE b (y); INSERT INTO nowhere VALUES (1);"}};
  absl::Status s = ApplyMigrations(*db, migrations);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.message(), "migration 0002_bad")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "no such table: nowhere")) << s;
  EXPECT_EQ(*SchemaVersion(*db), 1);
  EXPECT_TRUE(HasTable(*db, "a"));
  EXPECT_FALSE(HasTable(*db, "b"));  // rolled back with its migration
  EXPECT_FALSE(db->InTransaction());
}

TEST(MigrationsTest, DivergedOrMisorderedHistoryIsRefused) {
  TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  ASSERT_TRUE(
      ApplyMigrations(*db, {{1, "0001_a", "CREATE TABLE a (x);"}}).ok());
  absl::Status s = ApplyMigrations(*db, {{1, "0001_other", "SELECT 1;"}});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "0001_other")) << s;
  s = ApplyMigrations(*db, {{2, "0002_b", "SELECT 1;"}, {1, "0001_a", ""}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = ApplyMigrations(*db, {{1, "0001_a", ""}, {1, "0001_a", ""}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

}  // namespace
}  // namespace tessera::db
