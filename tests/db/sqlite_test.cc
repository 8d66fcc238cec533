// The sqlite3 wrappers: opening, errors as statuses, binding and reading,
// the statement cache, transactions, the busy retry and WAL reads.
#include "db/sqlite.h"

#include <sqlite3.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/db/test_util.h"

namespace tessera::db {
namespace {

using ::tessera::db::testing::TempDir;

std::unique_ptr<Database> OpenOrDie(const std::string& path,
                                    DatabaseOptions options = {}) {
  absl::StatusOr<std::unique_ptr<Database>> db = Database::Open(path, options);
  EXPECT_TRUE(db.ok()) << db.status();
  return db.ok() ? std::move(*db) : nullptr;
}

int64_t QueryIntOrDie(Database& db, absl::string_view sql) {
  absl::StatusOr<int64_t> v = db.QueryInt(sql);
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? *v : -1;
}

// Prepared statements on the connection whose SQL is `sql`.
int CountPrepared(Database& db, absl::string_view sql) {
  int count = 0;
  for (sqlite3_stmt* s = sqlite3_next_stmt(db.handle(), nullptr); s != nullptr;
       s = sqlite3_next_stmt(db.handle(), s)) {
    if (sql == sqlite3_sql(s)) ++count;
  }
  return count;
}

TEST(DatabaseTest, OpensWithWalForeignKeysBusyTimeoutAndFullSync) {
  TempDir dir;
  DatabaseOptions options;
  options.busy_timeout = absl::Milliseconds(1234);
  auto db = OpenOrDie(dir.File("a.db"), options);
  ASSERT_NE(db, nullptr);
  auto mode = db->Prepare("PRAGMA journal_mode");
  ASSERT_TRUE(mode.ok());
  ASSERT_TRUE(*mode->Step());
  EXPECT_EQ(mode->ColumnText(0), "wal");
  EXPECT_EQ(QueryIntOrDie(*db, "PRAGMA foreign_keys"), 1);
  EXPECT_EQ(QueryIntOrDie(*db, "PRAGMA synchronous"), 2);  // FULL
  EXPECT_EQ(QueryIntOrDie(*db, "PRAGMA busy_timeout"), 1234);
  EXPECT_EQ(QueryIntOrDie(*db, "PRAGMA query_only"), 0);

  options.synchronous = Synchronous::kNormal;
  options.query_only = true;
  auto reader = OpenOrDie(dir.File("a.db"), options);
  EXPECT_EQ(QueryIntOrDie(*reader, "PRAGMA synchronous"), 1);  // NORMAL
  EXPECT_EQ(QueryIntOrDie(*reader, "PRAGMA query_only"), 1);
  // SQLITE_READONLY: the store cannot be written now (not the caller's
  // mistake), as for a disk that turned read-only.
  absl::Status write = reader->Exec("CREATE TABLE t (x)");
  EXPECT_EQ(write.code(), absl::StatusCode::kUnavailable) << write;
  EXPECT_FALSE(IsBusy(write)) << write;
}

TEST(DatabaseTest, OpenErrorsSayWhy) {
  TempDir dir;
  const std::string junk = dir.File("junk.db");
  std::ofstream(junk) << std::string(4096, 'x');
  absl::StatusOr<std::unique_ptr<Database>> db =
      Database::Open(junk, DatabaseOptions{});
  EXPECT_EQ(db.status().code(), absl::StatusCode::kDataLoss) << db.status();
  EXPECT_TRUE(absl::StrContains(db.status().message(), "not a database"))
      << db.status();

  db = Database::Open(dir.File("no/such/dir/x.db"), DatabaseOptions{});
  EXPECT_EQ(db.status().code(), absl::StatusCode::kNotFound) << db.status();
  EXPECT_TRUE(absl::StrContains(db.status().message(), "no/such/dir"))
      << db.status();
}

TEST(DatabaseTest, ErrorsCarrySqliteMessageAndStatement) {
  TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  absl::StatusOr<Statement> bad = db->Prepare("SELEC 1 FROM nowhere");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "syntax error"))
      << bad.status();
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "SELEC 1 FROM nowhere"))
      << bad.status();

  ASSERT_TRUE(db->Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, "
                       "n INTEGER CHECK (n >= 0))")
                  .ok());
  ASSERT_TRUE(db->Exec("INSERT INTO t VALUES (1, 1)").ok());
  absl::Status dup = db->Exec("INSERT INTO t VALUES (1, 2)");
  EXPECT_EQ(dup.code(), absl::StatusCode::kAlreadyExists) << dup;
  EXPECT_TRUE(absl::StrContains(dup.message(), "UNIQUE constraint failed"));
  EXPECT_TRUE(absl::StrContains(dup.message(), "INSERT INTO t VALUES (1, 2)"));
  absl::Status check = db->Exec("INSERT INTO t VALUES (2, -1)");
  EXPECT_EQ(check.code(), absl::StatusCode::kFailedPrecondition) << check;
  EXPECT_TRUE(absl::StrContains(check.message(), "CHECK constraint failed"));

  EXPECT_FALSE(db->Prepare("SELECT 1; SELECT 2").ok());
  EXPECT_EQ(db->QueryInt("SELECT n FROM t WHERE id = 99").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(StatementTest, BindsByIndexAndNameAndReadsColumns) {
  TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  ASSERT_TRUE(
      db->Exec("CREATE TABLE t (i INTEGER, d REAL, s TEXT, n TEXT)").ok());
  {
    auto insert = db->Prepare("INSERT INTO t VALUES (?, ?, ?, ?)");
    ASSERT_TRUE(insert.ok());
    insert->BindInt(1, int64_t{1} << 40)
        .BindDouble(2, 0.25)
        .BindText(3, absl::string_view("a\0b", 3))
        .BindNull(4);
    ASSERT_TRUE(insert->Run().ok());
  }
  {
    auto insert = db->Prepare("INSERT INTO t VALUES (:i, @d, $s, :n)");
    ASSERT_TRUE(insert.ok());
    insert->BindInt(":i", -7)
        .BindDouble("@d", std::nan(""))
        .BindText("$s", "named")
        .BindNull(":n");
    ASSERT_TRUE(insert->Run().ok());
  }
  auto select = db->Prepare("SELECT i, d, s, n FROM t ORDER BY rowid");
  ASSERT_TRUE(select.ok());
  ASSERT_TRUE(*select->Step());
  EXPECT_EQ(select->ColumnCount(), 4);
  EXPECT_EQ(select->ColumnInt(0), int64_t{1} << 40);
  EXPECT_EQ(select->ColumnDouble(1), 0.25);
  EXPECT_EQ(select->ColumnText(2), std::string("a\0b", 3));
  EXPECT_TRUE(select->ColumnIsNull(3));
  EXPECT_EQ(select->ColumnOptionalText(3), std::nullopt);
  ASSERT_TRUE(*select->Step());
  EXPECT_EQ(select->ColumnOptionalInt(0), -7);
  EXPECT_TRUE(select->ColumnIsNull(1));  // NaN is stored as NULL
  EXPECT_TRUE(std::isnan(select->ColumnDouble(1)));
  EXPECT_EQ(select->ColumnOptionalDouble(1), std::nullopt);
  EXPECT_EQ(select->ColumnText(2), "named");
  EXPECT_FALSE(*select->Step());
}

TEST(StatementTest, BindErrorsSurfaceAtStep) {
  TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  auto s = db->Prepare("SELECT ?");
  ASSERT_TRUE(s.ok());
  s->BindInt(2, 1);
  absl::StatusOr<bool> step = s->Step();
  EXPECT_FALSE(step.ok());
  EXPECT_TRUE(absl::StrContains(step.status().message(), "parameter 2"))
      << step.status();
  s->Reset();
  s->BindInt(":missing", 1);
  step = s->Step();
  EXPECT_FALSE(step.ok());
  EXPECT_TRUE(absl::StrContains(step.status().message(), ":missing"));
  s->Reset();  // clears the error with the bindings
  s->BindInt(1, 5);
  ASSERT_TRUE(*s->Step());
  EXPECT_EQ(s->ColumnInt(0), 5);
}

TEST(StatementTest, CachedPerConnectionAndReusedAfterRelease) {
  TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  const std::string sql = "SELECT ? + 1";
  for (int i = 0; i < 10; ++i) {
    auto s = db->Prepare(sql);
    ASSERT_TRUE(s.ok());
    s->BindInt(1, i);
    ASSERT_TRUE(*s->Step());
    EXPECT_EQ(s->ColumnInt(0), i + 1);
    // A released statement comes back reset and with its bindings cleared.
  }
  EXPECT_EQ(CountPrepared(*db, sql), 1);
  {
    // The same SQL twice at once: two statements that do not disturb each
    // other (nested loops over one query).
    auto outer = db->Prepare(sql);
    auto inner = db->Prepare(sql);
    ASSERT_TRUE(outer.ok() && inner.ok());
    EXPECT_EQ(CountPrepared(*db, sql), 2);
    outer->BindInt(1, 10);
    inner->BindInt(1, 20);
    ASSERT_TRUE(*outer->Step());
    ASSERT_TRUE(*inner->Step());
    EXPECT_EQ(outer->ColumnInt(0), 11);
    EXPECT_EQ(inner->ColumnInt(0), 21);
  }
  auto again = db->Prepare(sql);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(*again->Step());
  EXPECT_TRUE(again->ColumnIsNull(0));  // no binding left over
}

TEST(TransactionTest, RollsBackWhenDestroyedUnlessCommitted) {
  TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  ASSERT_TRUE(db->Exec("CREATE TABLE t (x)").ok());
  {
    auto txn = Transaction::Begin(*db, TransactionMode::kImmediate);
    ASSERT_TRUE(txn.ok());
    ASSERT_TRUE(db->Exec("INSERT INTO t VALUES (1)").ok());
    EXPECT_TRUE(db->InTransaction());
  }
  EXPECT_FALSE(db->InTransaction());
  EXPECT_EQ(QueryIntOrDie(*db, "SELECT count(*) FROM t"), 0);
  {
    auto txn = Transaction::Begin(*db, TransactionMode::kDeferred);
    ASSERT_TRUE(txn.ok());
    ASSERT_TRUE(db->Exec("INSERT INTO t VALUES (2)").ok());
    ASSERT_TRUE(txn->Commit().ok());
    EXPECT_FALSE(txn->Commit().ok());  // once only
  }
  EXPECT_EQ(QueryIntOrDie(*db, "SELECT count(*) FROM t"), 1);
  {
    auto txn = Transaction::Begin(*db, TransactionMode::kImmediate);
    ASSERT_TRUE(txn.ok());
    ASSERT_TRUE(db->Exec("INSERT INTO t VALUES (3)").ok());
    ASSERT_TRUE(txn->Rollback().ok());
    EXPECT_TRUE(txn->Rollback().ok());  // a no-op now
  }
  EXPECT_EQ(QueryIntOrDie(*db, "SELECT count(*) FROM t"), 1);
}

TEST(TransactionTest, RunInTransactionRollsBackOnError) {
  TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  ASSERT_TRUE(db->Exec("CREATE TABLE t (x)").ok());
  int runs = 0;
  absl::Status s = RunInTransaction(
      *db, TransactionMode::kImmediate, [&](Database& d) -> absl::Status {
        ++runs;
        EXPECT_TRUE(d.Exec("INSERT INTO t VALUES (1)").ok());
        return absl::InvalidArgumentError("no");
      });
  EXPECT_EQ(s, absl::InvalidArgumentError("no"));
  EXPECT_EQ(runs, 1);  // only busy is retried
  EXPECT_EQ(QueryIntOrDie(*db, "SELECT count(*) FROM t"), 0);
  EXPECT_FALSE(db->InTransaction());
}

DatabaseOptions NoWaitOptions(int max_attempts) {
  DatabaseOptions options;
  options.busy_timeout = absl::ZeroDuration();  // busy at once
  options.retry.max_attempts = max_attempts;
  options.retry.initial_backoff = absl::Milliseconds(1);
  options.retry.max_backoff = absl::Milliseconds(8);
  return options;
}

TEST(TransactionTest, BusyIsRetriedWithBackoffUntilTheLockIsFree) {
  TempDir dir;
  auto holder = OpenOrDie(dir.File("a.db"));
  ASSERT_TRUE(holder->Exec("CREATE TABLE t (x)").ok());
  auto waiter = OpenOrDie(dir.File("a.db"), NoWaitOptions(200));
  auto txn = Transaction::Begin(*holder, TransactionMode::kImmediate);
  ASSERT_TRUE(txn.ok());
  std::thread release([&] {
    absl::SleepFor(absl::Milliseconds(50));
    EXPECT_TRUE(txn->Commit().ok());
  });
  const absl::Time start = absl::Now();
  absl::Status s = RunInTransaction(
      *waiter, TransactionMode::kImmediate,
      [](Database& d) { return d.Exec("INSERT INTO t VALUES (1)"); });
  release.join();
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(40));  // it did wait
  EXPECT_EQ(QueryIntOrDie(*holder, "SELECT count(*) FROM t"), 1);
}

TEST(TransactionTest, BusyRetryIsBounded) {
  TempDir dir;
  auto holder = OpenOrDie(dir.File("a.db"));
  ASSERT_TRUE(holder->Exec("CREATE TABLE t (x)").ok());
  auto waiter = OpenOrDie(dir.File("a.db"), NoWaitOptions(3));
  auto txn = Transaction::Begin(*holder, TransactionMode::kImmediate);
  ASSERT_TRUE(txn.ok());
  int body_runs = 0;
  absl::Status s =
      RunInTransaction(*waiter, TransactionMode::kImmediate, [&](Database&) {
        ++body_runs;
        return absl::OkStatus();
      });
  EXPECT_TRUE(IsBusy(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "database is locked")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "gave up after 3 attempts")) << s;
  EXPECT_EQ(body_runs, 0);  // BEGIN IMMEDIATE never got the lock
}

TEST(TransactionTest, AReadOnlyStoreIsUnavailableButNotBusy) {
  // A disk that turned read-only (PRAGMA query_only gives the same
  // SQLITE_READONLY): retryable later by the caller, so UNAVAILABLE, but not
  // a lock that retrying the transaction at once could wait out.
  TempDir dir;
  auto db = OpenOrDie(dir.File("a.db"));
  ASSERT_TRUE(db->Exec("CREATE TABLE t (x)").ok());
  ASSERT_TRUE(db->Exec("PRAGMA query_only = ON").ok());
  int body_runs = 0;
  absl::Status s =
      RunInTransaction(*db, TransactionMode::kDeferred, [&](Database& d) {
        ++body_runs;
        return d.Exec("INSERT INTO t VALUES (1)");
      });
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_FALSE(IsBusy(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "readonly")) << s;
  EXPECT_EQ(body_runs, 1);  // not retried
  EXPECT_FALSE(absl::StrContains(s.message(), "gave up")) << s;
}

TEST(WalTest, ReadersNeitherBlockNorAreBlockedByTheWriter) {
  TempDir dir;
  auto writer = OpenOrDie(dir.File("a.db"), NoWaitOptions(1));
  ASSERT_TRUE(writer->Exec("CREATE TABLE t (x)").ok());
  ASSERT_TRUE(writer->Exec("INSERT INTO t VALUES (1)").ok());
  DatabaseOptions reader_options = NoWaitOptions(1);
  reader_options.query_only = true;
  auto reader = OpenOrDie(dir.File("a.db"), reader_options);

  // The writer holds an open write transaction; the reader, which would get
  // SQLITE_BUSY at once (busy_timeout 0), reads the last commit.
  {
    auto txn = Transaction::Begin(*writer, TransactionMode::kImmediate);
    ASSERT_TRUE(txn.ok());
    ASSERT_TRUE(writer->Exec("INSERT INTO t VALUES (2)").ok());
    absl::StatusOr<int64_t> seen = reader->QueryInt("SELECT count(*) FROM t");
    ASSERT_TRUE(seen.ok()) << seen.status();
    EXPECT_EQ(*seen, 1);
    ASSERT_TRUE(txn->Commit().ok());
  }
  EXPECT_EQ(QueryIntOrDie(*reader, "SELECT count(*) FROM t"), 2);

  // A reader holding a snapshot does not stop the writer from committing.
  auto snapshot = Transaction::Begin(*reader, TransactionMode::kDeferred);
  ASSERT_TRUE(snapshot.ok());
  EXPECT_EQ(QueryIntOrDie(*reader, "SELECT count(*) FROM t"), 2);
  EXPECT_TRUE(writer->Exec("INSERT INTO t VALUES (3)").ok());
  EXPECT_EQ(QueryIntOrDie(*reader, "SELECT count(*) FROM t"), 2);  // snapshot
  ASSERT_TRUE(snapshot->Commit().ok());
  EXPECT_EQ(QueryIntOrDie(*reader, "SELECT count(*) FROM t"), 3);
}

}  // namespace
}  // namespace tessera::db
