#include "db/sqlite.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace tessera::db {
namespace {

// The SQL as it reads in an error message: whitespace runs collapsed, long
// scripts cut.
std::string SqlForMessage(absl::string_view sql) {
  constexpr size_t kMaxChars = 400;
  std::string out;
  bool space = false;
  for (char c : sql) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
    if (out.size() >= kMaxChars) {
      out.append("...");
      break;
    }
  }
  return out;
}

// Marks a status as a lock held by another connection (IsBusy), apart from
// the other Unavailable errors (a read-only or failing disk).
constexpr char kBusyPayload[] = "tessera.db/sqlite-busy";

absl::StatusCode CodeFor(int rc) {
  switch (rc) {
    case SQLITE_CONSTRAINT_PRIMARYKEY:
    case SQLITE_CONSTRAINT_UNIQUE:
      return absl::StatusCode::kAlreadyExists;
    default:
      break;
  }
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_READONLY:  // the file or its disk turned read-only
    case SQLITE_IOERR:     // the disk failed the read or write
      return absl::StatusCode::kUnavailable;
    case SQLITE_CONSTRAINT:
      return absl::StatusCode::kFailedPrecondition;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::StatusCode::kDataLoss;
    case SQLITE_FULL:
    case SQLITE_NOMEM:
      return absl::StatusCode::kResourceExhausted;
    case SQLITE_CANTOPEN:
      return absl::StatusCode::kNotFound;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::Status StatusFor(int rc, absl::string_view detail,
                       absl::string_view sql) {
  std::string message = absl::StrCat("sqlite: ", detail, " (",
                                     sqlite3_errstr(rc), ", code ", rc, ")");
  if (!sql.empty()) absl::StrAppend(&message, " in `", SqlForMessage(sql), "`");
  absl::Status status(CodeFor(rc), message);
  if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) {
    status.SetPayload(kBusyPayload, absl::Cord("1"));
  }
  return status;
}

int ToMillis(absl::Duration d) {
  return static_cast<int>(
      std::clamp<int64_t>(absl::ToInt64Milliseconds(d), 0, 1 << 30));
}

}  // namespace

// ---- Statement ----

Statement::Statement(Database* db, sqlite3_stmt* stmt, std::string sql)
    : db_(db), stmt_(stmt), sql_(std::move(sql)) {}

Statement::Statement(Statement&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      stmt_(std::exchange(other.stmt_, nullptr)),
      sql_(std::move(other.sql_)),
      bind_status_(std::move(other.bind_status_)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    if (stmt_ != nullptr) db_->Release(stmt_, std::move(sql_));
    db_ = std::exchange(other.db_, nullptr);
    stmt_ = std::exchange(other.stmt_, nullptr);
    sql_ = std::move(other.sql_);
    bind_status_ = std::move(other.bind_status_);
  }
  return *this;
}

Statement::~Statement() {
  if (stmt_ != nullptr) db_->Release(stmt_, std::move(sql_));
}

void Statement::RecordBindResult(int rc, absl::string_view what) {
  if (rc == SQLITE_OK || !bind_status_.ok()) return;
  bind_status_ = StatusFor(
      rc, absl::StrCat("binding ", what, ": ", sqlite3_errmsg(db_->handle())),
      sql_);
}

int Statement::NamedIndex(absl::string_view name) {
  const int index =
      sqlite3_bind_parameter_index(stmt_, std::string(name).c_str());
  if (index == 0 && bind_status_.ok()) {
    bind_status_ =
        absl::InternalError(absl::StrCat("sqlite: no parameter named ", name,
                                         " in `", SqlForMessage(sql_), "`"));
  }
  return index;
}

Statement& Statement::BindInt(int index, int64_t value) {
  RecordBindResult(sqlite3_bind_int64(stmt_, index, value),
                   absl::StrCat("parameter ", index));
  return *this;
}

Statement& Statement::BindDouble(int index, double value) {
  RecordBindResult(sqlite3_bind_double(stmt_, index, value),
                   absl::StrCat("parameter ", index));
  return *this;
}

Statement& Statement::BindText(int index, absl::string_view value) {
  RecordBindResult(sqlite3_bind_text64(stmt_, index, value.data(), value.size(),
                                       SQLITE_TRANSIENT, SQLITE_UTF8),
                   absl::StrCat("parameter ", index));
  return *this;
}

Statement& Statement::BindNull(int index) {
  RecordBindResult(sqlite3_bind_null(stmt_, index),
                   absl::StrCat("parameter ", index));
  return *this;
}

Statement& Statement::BindOptionalInt(int index, std::optional<int64_t> value) {
  return value.has_value() ? BindInt(index, *value) : BindNull(index);
}

Statement& Statement::BindOptionalDouble(int index,
                                         std::optional<double> value) {
  return value.has_value() ? BindDouble(index, *value) : BindNull(index);
}

Statement& Statement::BindInt(absl::string_view name, int64_t value) {
  const int index = NamedIndex(name);
  return index == 0 ? *this : BindInt(index, value);
}

Statement& Statement::BindDouble(absl::string_view name, double value) {
  const int index = NamedIndex(name);
  return index == 0 ? *this : BindDouble(index, value);
}

Statement& Statement::BindText(absl::string_view name,
                               absl::string_view value) {
  const int index = NamedIndex(name);
  return index == 0 ? *this : BindText(index, value);
}

Statement& Statement::BindNull(absl::string_view name) {
  const int index = NamedIndex(name);
  return index == 0 ? *this : BindNull(index);
}

absl::StatusOr<bool> Statement::Step() {
  if (!bind_status_.ok()) return bind_status_;
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return StatusFor(rc, sqlite3_errmsg(db_->handle()), sql_);
}

absl::Status Statement::Run() {
  while (true) {
    TESSERA_ASSIGN_OR_RETURN(const bool row, Step());
    if (!row) return absl::OkStatus();
  }
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_status_ = absl::OkStatus();
}

int Statement::ColumnCount() const { return sqlite3_column_count(stmt_); }

bool Statement::ColumnIsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

int64_t Statement::ColumnInt(int column) const {
  return sqlite3_column_int64(stmt_, column);
}

double Statement::ColumnDouble(int column) const {
  if (ColumnIsNull(column)) return std::nan("");
  return sqlite3_column_double(stmt_, column);
}

std::string Statement::ColumnText(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text),
                     sqlite3_column_bytes(stmt_, column));
}

std::optional<int64_t> Statement::ColumnOptionalInt(int column) const {
  if (ColumnIsNull(column)) return std::nullopt;
  return ColumnInt(column);
}

std::optional<double> Statement::ColumnOptionalDouble(int column) const {
  if (ColumnIsNull(column)) return std::nullopt;
  return ColumnDouble(column);
}

std::optional<std::string> Statement::ColumnOptionalText(int column) const {
  if (ColumnIsNull(column)) return std::nullopt;
  return ColumnText(column);
}

// ---- Database ----

Database::Database(sqlite3* db, std::string path,
                   const DatabaseOptions& options)
    : db_(db), path_(std::move(path)), options_(options) {}

absl::StatusOr<std::unique_ptr<Database>> Database::Open(
    absl::string_view path, const DatabaseOptions& options) {
  sqlite3* handle = nullptr;
  const std::string file(path);
  const int rc = sqlite3_open_v2(
      file.c_str(), &handle,
      (options.read_only ? SQLITE_OPEN_READONLY
                         : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
          SQLITE_OPEN_NOMUTEX,
      nullptr);
  if (rc != SQLITE_OK) {
    absl::Status status = StatusFor(
        rc,
        absl::StrCat("opening ", path, ": ",
                     handle != nullptr ? sqlite3_errmsg(handle) : "no memory"),
        "");
    sqlite3_close(handle);
    return status;
  }
  sqlite3_extended_result_codes(handle, 1);
  sqlite3_busy_timeout(handle, ToMillis(options.busy_timeout));
  std::unique_ptr<Database> db(new Database(handle, file, options));

  // WAL: readers see the last commit and never block the writer.
  TESSERA_ASSIGN_OR_RETURN(
      Statement wal,
      db->Prepare(options.read_only ? "PRAGMA journal_mode"
                                    : "PRAGMA journal_mode=WAL"));
  TESSERA_ASSIGN_OR_RETURN(const bool row, wal.Step());
  const std::string mode = row ? absl::AsciiStrToLower(wal.ColumnText(0)) : "";
  if (mode != "wal") {
    return absl::FailedPreconditionError(absl::StrCat(
        "sqlite: ", path, " cannot use WAL (journal_mode is '", mode, "')"));
  }
  TESSERA_RETURN_IF_ERROR(db->Exec("PRAGMA foreign_keys=ON"));
  TESSERA_RETURN_IF_ERROR(db->Exec(options.synchronous == Synchronous::kFull
                                       ? "PRAGMA synchronous=FULL"
                                       : "PRAGMA synchronous=NORMAL"));
  if (options.query_only || options.read_only) {
    TESSERA_RETURN_IF_ERROR(db->Exec("PRAGMA query_only=ON"));
  }
  return db;
}

Database::~Database() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  cache_.clear();
  // v2: should a Statement still be alive, the connection closes when it is
  // finalized instead of failing now.
  sqlite3_close_v2(db_);
}

absl::Status Database::Error(int rc, absl::string_view sql) const {
  return StatusFor(rc, sqlite3_errmsg(db_), sql);
}

absl::Status Database::Exec(absl::string_view sql) {
  const int rc =
      sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return Error(rc, sql);
  return absl::OkStatus();
}

absl::StatusOr<Statement> Database::Prepare(absl::string_view sql) {
  std::string text(sql);
  if (auto it = cache_.find(text); it != cache_.end()) {
    sqlite3_stmt* stmt = it->second;
    cache_.erase(it);
    return Statement(this, stmt, std::move(text));
  }
  sqlite3_stmt* stmt = nullptr;
  const char* tail = nullptr;
  const int rc =
      sqlite3_prepare_v3(db_, text.data(), static_cast<int>(text.size()),
                         SQLITE_PREPARE_PERSISTENT, &stmt, &tail);
  if (rc != SQLITE_OK) return Error(rc, sql);
  if (stmt == nullptr) {
    return absl::InternalError(
        absl::StrCat("sqlite: no statement in `", SqlForMessage(sql), "`"));
  }
  const absl::string_view rest(tail, text.data() + text.size() - tail);
  if (!absl::StripAsciiWhitespace(rest).empty()) {
    sqlite3_finalize(stmt);
    return absl::InternalError(absl::StrCat(
        "sqlite: more than one statement in `", SqlForMessage(sql), "`"));
  }
  return Statement(this, stmt, std::move(text));
}

absl::StatusOr<int64_t> Database::QueryInt(absl::string_view sql) {
  TESSERA_ASSIGN_OR_RETURN(Statement stmt, Prepare(sql));
  TESSERA_ASSIGN_OR_RETURN(const bool row, stmt.Step());
  if (!row) {
    return absl::NotFoundError(
        absl::StrCat("sqlite: no row from `", SqlForMessage(sql), "`"));
  }
  return stmt.ColumnInt(0);
}

void Database::Release(sqlite3_stmt* stmt, std::string sql) {
  sqlite3_reset(stmt);
  sqlite3_clear_bindings(stmt);
  if (static_cast<int>(cache_.size()) >= options_.statement_cache_size) {
    sqlite3_finalize(stmt);
    return;
  }
  cache_.emplace(std::move(sql), stmt);
}

int64_t Database::LastInsertRowId() const {
  return sqlite3_last_insert_rowid(db_);
}

int64_t Database::Changes() const { return sqlite3_changes64(db_); }

bool Database::InTransaction() const {
  return sqlite3_get_autocommit(db_) == 0;
}

// ---- Transaction ----

absl::StatusOr<Transaction> Transaction::Begin(Database& db,
                                               TransactionMode mode) {
  TESSERA_ASSIGN_OR_RETURN(
      Statement begin,
      db.Prepare(mode == TransactionMode::kImmediate ? "BEGIN IMMEDIATE"
                                                     : "BEGIN"));
  TESSERA_RETURN_IF_ERROR(begin.Run());
  return Transaction(&db);
}

Transaction::Transaction(Transaction&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)) {}

Transaction::~Transaction() { Rollback().IgnoreError(); }

absl::Status Transaction::Commit() {
  if (db_ == nullptr) {
    return absl::FailedPreconditionError(
        "sqlite: transaction already committed or rolled back");
  }
  {
    TESSERA_ASSIGN_OR_RETURN(Statement commit, db_->Prepare("COMMIT"));
    TESSERA_RETURN_IF_ERROR(commit.Run());
  }
  db_ = nullptr;
  return absl::OkStatus();
}

absl::Status Transaction::Rollback() {
  Database* db = std::exchange(db_, nullptr);
  // sqlite rolls back by itself after some errors (SQLITE_FULL, SQLITE_IOERR).
  if (db == nullptr || !db->InTransaction()) return absl::OkStatus();
  TESSERA_ASSIGN_OR_RETURN(Statement rollback, db->Prepare("ROLLBACK"));
  return rollback.Run();
}

// ---- Retry ----

bool IsBusy(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable &&
         status.GetPayload(kBusyPayload).has_value();
}

namespace {

absl::Status AttemptTransaction(
    Database& db, TransactionMode mode,
    const std::function<absl::Status(Database&)>& body) {
  TESSERA_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(db, mode));
  TESSERA_RETURN_IF_ERROR(body(db));
  return txn.Commit();
}

}  // namespace

absl::Status RunInTransaction(
    Database& db, TransactionMode mode,
    const std::function<absl::Status(Database&)>& body) {
  const RetryPolicy& policy = db.options().retry;
  const int max_attempts = std::max(1, policy.max_attempts);
  absl::Duration backoff = policy.initial_backoff;
  thread_local absl::BitGen random;
  for (int attempt = 1;; ++attempt) {
    absl::Status status = AttemptTransaction(db, mode, body);
    if (!IsBusy(status)) return status;
    if (attempt >= max_attempts) {
      absl::Status gave_up(status.code(),
                           absl::StrCat(status.message(), " (gave up after ",
                                        attempt, " attempts)"));
      gave_up.SetPayload(kBusyPayload, absl::Cord("1"));
      return gave_up;
    }
    // Full backoff halved by jitter, so that waiting writers spread out.
    absl::SleepFor(backoff * absl::Uniform(random, 0.5, 1.0));
    backoff = std::min(backoff * 2, policy.max_backoff);
  }
}

namespace {

// One attempt of a batch: each body in its savepoint, one commit.
std::vector<absl::Status> AttemptBatch(
    Database& db, TransactionMode mode,
    const std::vector<const std::function<absl::Status(Database&)>*>& bodies) {
  std::vector<absl::Status> statuses(bodies.size());
  absl::StatusOr<Transaction> txn = Transaction::Begin(db, mode);
  if (!txn.ok()) {
    statuses.assign(bodies.size(), txn.status());
    return statuses;
  }
  const auto step = [&db](absl::string_view sql) -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(Statement statement, db.Prepare(sql));
    return statement.Run();
  };
  for (size_t i = 0; i < bodies.size(); ++i) {
    absl::Status s = step("SAVEPOINT group_write");
    if (s.ok()) s = (*bodies[i])(db);
    if (IsBusy(s) || !db.InTransaction()) {
      // Busy: the batch runs again; sqlite rolled the transaction back (a
      // full disk, an I/O error): nothing of it remains.
      statuses.assign(bodies.size(), s);
      return statuses;
    }
    if (!s.ok()) {
      absl::Status undone = step("ROLLBACK TO group_write");
      if (undone.ok()) undone = step("RELEASE group_write");
      if (!undone.ok()) {
        statuses.assign(bodies.size(), undone);
        return statuses;
      }
      statuses[i] = std::move(s);
      continue;
    }
    if (absl::Status released = step("RELEASE group_write"); !released.ok()) {
      statuses.assign(bodies.size(), released);
      return statuses;
    }
  }
  const absl::Status committed = txn->Commit();
  if (!committed.ok()) {
    for (absl::Status& s : statuses) {
      if (s.ok()) s = committed;
    }
  }
  return statuses;
}

}  // namespace

std::vector<absl::Status> RunBatchInTransaction(
    Database& db, TransactionMode mode,
    const std::vector<const std::function<absl::Status(Database&)>*>& bodies) {
  if (bodies.size() == 1) return {RunInTransaction(db, mode, *bodies[0])};
  const RetryPolicy& policy = db.options().retry;
  const int max_attempts = std::max(1, policy.max_attempts);
  absl::Duration backoff = policy.initial_backoff;
  thread_local absl::BitGen random;
  for (int attempt = 1;; ++attempt) {
    std::vector<absl::Status> statuses = AttemptBatch(db, mode, bodies);
    const bool busy = std::any_of(statuses.begin(), statuses.end(),
                                  [](const absl::Status& s) {
                                    return IsBusy(s);
                                  });
    if (!busy || attempt >= max_attempts) return statuses;
    absl::SleepFor(backoff * absl::Uniform(random, 0.5, 1.0));
    backoff = std::min(backoff * 2, policy.max_backoff);
  }
}

}  // namespace tessera::db
