#include "db/store_backup.h"

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/status_macros.h"
#include "db/sqlite.h"
#include "db/sqlite_trial_store.h"

namespace tessera::db {

namespace fs = std::filesystem;

namespace {

// sqlite3 handle owner (the backup API works on raw connections).
struct Connection {
  sqlite3* db = nullptr;
  ~Connection() { sqlite3_close_v2(db); }
};

absl::Status Opened(int rc, const Connection& c, absl::string_view what) {
  if (rc == SQLITE_OK) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("backup: opening ", what, ": ",
                   c.db != nullptr ? sqlite3_errmsg(c.db) : "no memory"));
}

absl::Status Copy(const std::string& store_path,
                  const std::string& backup_path) {
  Connection src, dst;
  TESSERA_RETURN_IF_ERROR(Opened(sqlite3_open_v2(store_path.c_str(), &src.db,
                                                 SQLITE_OPEN_READONLY, nullptr),
                                 src, store_path));
  TESSERA_RETURN_IF_ERROR(
      Opened(sqlite3_open_v2(backup_path.c_str(), &dst.db,
                             SQLITE_OPEN_READWRITE, nullptr),
             dst, backup_path));
  sqlite3_backup* backup = sqlite3_backup_init(dst.db, "main", src.db, "main");
  if (backup == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("backup: ", sqlite3_errmsg(dst.db)));
  }
  // All pages in one step; a writer's lock makes it wait and try again
  // (the planner holds its write lock for one transaction at a time).
  int rc = SQLITE_OK;
  for (int tries = 0; tries < 200; ++tries) {
    rc = sqlite3_backup_step(backup, -1);
    if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  const int finish = sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) {
    return absl::UnavailableError(
        absl::StrCat("backup: copying ", store_path, ": ", sqlite3_errstr(rc)));
  }
  if (finish != SQLITE_OK) {
    return absl::FailedPreconditionError(
        absl::StrCat("backup: ", sqlite3_errstr(finish)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status BackupStore(const std::string& store_path,
                         const std::string& backup_path) {
  std::error_code ec;
  if (!fs::exists(store_path, ec)) {
    return absl::NotFoundError(
        absl::StrCat("--db: ", store_path, " does not exist"));
  }
  if (fs::exists(backup_path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--backup: ", backup_path,
        " exists (a backup never overwrites a file; name a new one)"));
  }
  TESSERA_RETURN_IF_ERROR(CreateOwnerOnly(backup_path));
  absl::Status status = Copy(store_path, backup_path);
  if (status.ok()) {
    absl::StatusOr<std::unique_ptr<Database>> check = Database::Open(
        backup_path, DatabaseOptions{.read_only = true, .retry = {}});
    status = check.ok() ? QuickCheck(**check, backup_path) : check.status();
  }
  if (!status.ok()) fs::remove(backup_path, ec);
  return status;
}

}  // namespace tessera::db
