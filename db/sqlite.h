// Small RAII wrappers over the sqlite3 C API: one owner per connection
// (Database), prepared statements that are cached and reused per connection
// (Statement), transactions that roll back unless committed (Transaction), and
// a bounded retry with backoff when another connection holds the lock.
//
//   TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Database> db,
//                            Database::Open("tessera.db", DatabaseOptions{}));
//   TESSERA_RETURN_IF_ERROR(RunInTransaction(
//       *db, TransactionMode::kImmediate, [&](Database& d) -> absl::Status {
//         TESSERA_ASSIGN_OR_RETURN(Statement insert,
//                                  d.Prepare("INSERT INTO t (x) VALUES (?)"));
//         insert.BindInt(1, 42);
//         return insert.Run();
//       }));
//
// Every sqlite error becomes an absl::Status whose message carries sqlite's
// message, its (extended) result code and the statement's SQL. Codes map as:
// SQLITE_BUSY / SQLITE_LOCKED -> Unavailable marked busy (IsBusy;
// RunInTransaction retries them), SQLITE_READONLY / SQLITE_IOERR (a disk
// that turned read-only or fails) -> Unavailable not marked busy (retryable
// by the caller later: an agent keeps its result and reports again, it does
// not take it for a lost lease), a UNIQUE or PRIMARY KEY constraint ->
// AlreadyExists, other constraints (CHECK, FOREIGN KEY, NOT NULL) ->
// FailedPrecondition, SQLITE_CORRUPT / SQLITE_NOTADB -> DataLoss, SQLITE_FULL /
// SQLITE_NOMEM -> ResourceExhausted, SQLITE_CANTOPEN -> NotFound, anything else
// (SQL errors, misuse) -> Internal.
//
// Thread safety: a Database and its Statements are used by one thread at a
// time (the connection is opened SQLITE_OPEN_NOMUTEX); callers that share one
// serialize with their own mutex. Separate Databases on the same file may be
// used from different threads or processes at once.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

struct sqlite3;
struct sqlite3_stmt;

namespace tessera::db {

// How hard sqlite syncs a commit to disk (PRAGMA synchronous).
enum class Synchronous {
  // fsync the WAL at every commit: a committed transaction survives a power
  // loss or OS crash, not only a process crash. The default, because an agent
  // whose ReportTrial returned OK never sends that result again.
  kFull,
  // fsync only at checkpoints: survives a crash of the process, but the last
  // commits may roll back on power loss. For scratch databases and benchmarks.
  kNormal,
};

// The bounded retry of a whole transaction that found the database locked by
// another connection (after sqlite's own busy_timeout wait gave up, or in the
// cases where sqlite reports SQLITE_BUSY without waiting).
struct RetryPolicy {
  int max_attempts = 8;  // transaction attempts in all, >= 1
  absl::Duration initial_backoff = absl::Milliseconds(2);
  absl::Duration max_backoff = absl::Milliseconds(250);  // doubling, capped
};

struct DatabaseOptions {
  // How long sqlite itself waits for a lock before reporting SQLITE_BUSY.
  absl::Duration busy_timeout = absl::Seconds(2);
  Synchronous synchronous = Synchronous::kFull;
  // PRAGMA query_only: every write is refused (used for reader connections).
  bool query_only = false;
  // SQLITE_OPEN_READONLY: the file must exist, nothing is created and the
  // journal mode is read, not set (a store opened for history only).
  bool read_only = false;
  RetryPolicy retry;
  // Prepared statements kept for reuse per connection (by SQL text).
  int statement_cache_size = 128;
};

class Database;

// One prepared statement. Obtained from Database::Prepare; when destroyed it is
// reset, its bindings cleared, and it goes back to its connection's cache. A
// Statement must not outlive its Database. Bind* calls chain; a bind error
// (a bad index or name) is kept and returned by the next Step/Run.
class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Parameters are numbered from 1 (`?`, `?NNN`) or named (`:name`, `@name`,
  // `$name`, given with their prefix).
  Statement& BindInt(int index, int64_t value);
  Statement& BindDouble(int index, double value);  // NaN is stored as NULL
  Statement& BindText(int index, absl::string_view value);
  Statement& BindNull(int index);
  Statement& BindOptionalInt(int index, std::optional<int64_t> value);
  Statement& BindOptionalDouble(int index, std::optional<double> value);
  Statement& BindInt(absl::string_view name, int64_t value);
  Statement& BindDouble(absl::string_view name, double value);
  Statement& BindText(absl::string_view name, absl::string_view value);
  Statement& BindNull(absl::string_view name);

  // Advances: true when a row is ready to read, false when the statement is
  // done. Errors carry sqlite's message and this statement's SQL.
  absl::StatusOr<bool> Step();
  // Steps to completion, ignoring rows (INSERT, UPDATE, DELETE, DDL).
  absl::Status Run();
  // Resets to run again and clears the bindings.
  void Reset();

  // Columns of the current row, numbered from 0. A NULL reads as 0 / "" /
  // nullopt; ColumnDouble reads a NULL as NaN.
  int ColumnCount() const;
  bool ColumnIsNull(int column) const;
  int64_t ColumnInt(int column) const;
  double ColumnDouble(int column) const;
  std::string ColumnText(int column) const;
  std::optional<int64_t> ColumnOptionalInt(int column) const;
  std::optional<double> ColumnOptionalDouble(int column) const;
  std::optional<std::string> ColumnOptionalText(int column) const;

  const std::string& sql() const { return sql_; }

 private:
  friend class Database;
  Statement(Database* db, sqlite3_stmt* stmt, std::string sql);
  void RecordBindResult(int rc, absl::string_view what);
  int NamedIndex(absl::string_view name);

  Database* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  std::string sql_;
  absl::Status bind_status_;
};

// One connection, its owner. Opened with WAL, foreign_keys=ON, the busy
// timeout and the synchronous level of its options.
class Database {
 public:
  // Opens (creating when absent, unless options.read_only) the database file
  // at `path`. Fails when the file cannot be opened, is not a database, or
  // cannot use WAL (read-only: is not in WAL mode).
  static absl::StatusOr<std::unique_ptr<Database>> Open(
      absl::string_view path, const DatabaseOptions& options);
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  // Finalizes the cached statements and closes the connection; an open
  // transaction is rolled back by sqlite.
  ~Database();

  // Runs one or more statements that return no rows (a migration script).
  absl::Status Exec(absl::string_view sql);
  // A prepared statement for `sql`, from this connection's cache when one is
  // free, else freshly prepared (so the same SQL may be in use twice at once).
  absl::StatusOr<Statement> Prepare(absl::string_view sql);
  // Runs `sql` (with no parameters) and returns the first column of its first
  // row; NotFound when it returns no row.
  absl::StatusOr<int64_t> QueryInt(absl::string_view sql);

  // The rowid of the last INSERT on this connection.
  int64_t LastInsertRowId() const;
  // Rows changed by the last INSERT, UPDATE or DELETE on this connection.
  int64_t Changes() const;
  // True while a transaction is open on this connection.
  bool InTransaction() const;

  const std::string& path() const { return path_; }
  const DatabaseOptions& options() const { return options_; }
  sqlite3* handle() { return db_; }

  // The status for result code `rc` of running `sql` on this connection.
  absl::Status Error(int rc, absl::string_view sql) const;

 private:
  friend class Statement;
  Database(sqlite3* db, std::string path, const DatabaseOptions& options);
  // Takes back a statement whose Statement was destroyed.
  void Release(sqlite3_stmt* stmt, std::string sql);

  sqlite3* db_ = nullptr;
  std::string path_;
  DatabaseOptions options_;
  std::multimap<std::string, sqlite3_stmt*> cache_;  // free statements by SQL
};

enum class TransactionMode {
  kDeferred,   // BEGIN: takes the write lock at the first write (readers)
  kImmediate,  // BEGIN IMMEDIATE: takes the write lock now (writers)
};

// An open transaction on one Database. Rolls back when destroyed unless
// Commit() succeeded. Movable, not copyable.
class Transaction {
 public:
  static absl::StatusOr<Transaction> Begin(Database& db, TransactionMode mode);
  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&& other) = delete;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  // Commits; on failure the transaction is rolled back (by the destructor).
  absl::Status Commit();
  // Rolls back now; a no-op when already committed or rolled back.
  absl::Status Rollback();

 private:
  explicit Transaction(Database* db) : db_(db) {}
  Database* db_ = nullptr;  // null once committed or rolled back
};

// True for the status of SQLITE_BUSY / SQLITE_LOCKED: another connection held
// the lock; running the transaction again may succeed.
bool IsBusy(const absl::Status& status);

// Runs `body` inside a transaction of `mode` and commits it. When the begin,
// the body or the commit reports busy, the transaction is rolled back and run
// again after a backoff (exponential with jitter), at most
// db.options().retry.max_attempts times in all; then the busy status is
// returned. Any other error rolls back and is returned at once. `body` may run
// more than once: it must start from scratch each time.
absl::Status RunInTransaction(
    Database& db, TransactionMode mode,
    const std::function<absl::Status(Database&)>& body);

// Runs several writes as one transaction of `mode` (group_commit.h): each
// body inside its own SAVEPOINT, rolled back to it when the body fails (that
// body changes nothing; the others go on), and one COMMIT for all. Returns
// one status per body: its own error, or OK once the commit succeeded (a
// failed commit, or an error after which sqlite rolled the whole
// transaction back, is every body's status). Busy is retried for the whole
// batch as RunInTransaction does. One body alone runs as RunInTransaction.
std::vector<absl::Status> RunBatchInTransaction(
    Database& db, TransactionMode mode,
    const std::vector<const std::function<absl::Status(Database&)>*>& bodies);

}  // namespace tessera::db
