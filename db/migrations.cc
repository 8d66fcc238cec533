#include "db/migrations.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/status_macros.h"

namespace tessera::db {
namespace {

constexpr absl::string_view kCreateSchemaMigrations =
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL,"
    " applied_at_us INTEGER NOT NULL)";

// version -> name of what the database records.
absl::StatusOr<std::map<int64_t, std::string>> AppliedMigrations(Database& db) {
  TESSERA_RETURN_IF_ERROR(db.Exec(kCreateSchemaMigrations));
  TESSERA_ASSIGN_OR_RETURN(
      Statement select,
      db.Prepare(
          "SELECT version, name FROM schema_migrations ORDER BY version"));
  std::map<int64_t, std::string> applied;
  while (true) {
    TESSERA_ASSIGN_OR_RETURN(const bool row, select.Step());
    if (!row) break;
    applied[select.ColumnInt(0)] = select.ColumnText(1);
  }
  return applied;
}

absl::Status CheckOrder(const std::vector<Migration>& migrations) {
  int64_t previous = 0;
  for (const Migration& m : migrations) {
    if (m.version <= previous) {
      return absl::InvalidArgumentError(
          absl::StrCat("migrations: version ", m.version, " (", m.name,
                       ") must be greater than ", previous, " and follow it"));
    }
    previous = m.version;
  }
  return absl::OkStatus();
}

// Checks what the database records against what this binary knows, and
// returns the version the database is at.
absl::StatusOr<int64_t> CheckApplied(
    const std::map<int64_t, std::string>& applied,
    const std::vector<Migration>& migrations) {
  const int64_t known = migrations.empty() ? 0 : migrations.back().version;
  const int64_t current = applied.empty() ? 0 : applied.rbegin()->first;
  if (current > known) {
    return absl::FailedPreconditionError(absl::StrCat(
        "database schema version ", current, " (", applied.rbegin()->second,
        ") is newer than this build of tessera knows (", known,
        "); use a newer tessera or another database file"));
  }
  for (const Migration& m : migrations) {
    if (m.version > current) break;
    auto it = applied.find(m.version);
    if (it == applied.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "database schema lacks migration ", m.name, " but is at version ",
          current, "; migrations are forward-only"));
    }
    if (it->second != m.name) {
      return absl::FailedPreconditionError(
          absl::StrCat("database schema version ", m.version, " is '",
                       it->second, "', this build knows it as '", m.name, "'"));
    }
  }
  return current;
}

absl::Status ApplyOne(Database& db, const Migration& m,
                      const std::vector<Migration>& migrations) {
  return RunInTransaction(
      db, TransactionMode::kImmediate, [&](Database& d) -> absl::Status {
        // Another process may have got here first.
        TESSERA_ASSIGN_OR_RETURN(auto applied, AppliedMigrations(d));
        TESSERA_ASSIGN_OR_RETURN(const int64_t current,
                                 CheckApplied(applied, migrations));
        if (current >= m.version) return absl::OkStatus();
        absl::Status run = d.Exec(m.sql);
        if (!run.ok()) {
          return absl::Status(run.code(), absl::StrCat("migration ", m.name,
                                                       ": ", run.message()));
        }
        TESSERA_ASSIGN_OR_RETURN(
            Statement record,
            d.Prepare("INSERT INTO schema_migrations (version, name, "
                      "applied_at_us) VALUES (?, ?, ?)"));
        record.BindInt(1, m.version)
            .BindText(2, m.name)
            .BindInt(3, absl::ToUnixMicros(absl::Now()));
        TESSERA_RETURN_IF_ERROR(record.Run());
        // For tools that read sqlite's own version slot.
        return d.Exec(absl::StrCat("PRAGMA user_version = ", m.version));
      });
}

}  // namespace

absl::StatusOr<int64_t> SchemaVersion(Database& db) {
  TESSERA_ASSIGN_OR_RETURN(auto applied, AppliedMigrations(db));
  return applied.empty() ? 0 : applied.rbegin()->first;
}

absl::Status CheckMigrated(Database& db,
                           const std::vector<Migration>& migrations) {
  TESSERA_RETURN_IF_ERROR(CheckOrder(migrations));
  return RunInTransaction(
      db, TransactionMode::kDeferred, [&](Database& d) -> absl::Status {
        TESSERA_ASSIGN_OR_RETURN(
            const int64_t tables,
            d.QueryInt("SELECT count(*) FROM sqlite_master WHERE type = "
                       "'table' AND name = 'schema_migrations'"));
        if (tables == 0) {
          return absl::FailedPreconditionError(absl::StrCat(
              d.path(), " is not a Tessera store (it has no schema_migrations "
                        "table)"));
        }
        TESSERA_ASSIGN_OR_RETURN(
            Statement select,
            d.Prepare("SELECT version, name FROM schema_migrations"));
        std::map<int64_t, std::string> applied;
        while (true) {
          TESSERA_ASSIGN_OR_RETURN(const bool row, select.Step());
          if (!row) break;
          applied[select.ColumnInt(0)] = select.ColumnText(1);
        }
        TESSERA_ASSIGN_OR_RETURN(const int64_t current,
                                 CheckApplied(applied, migrations));
        const int64_t known = migrations.empty() ? 0 : migrations.back().version;
        if (current < known) {
          return absl::FailedPreconditionError(absl::StrCat(
              d.path(), " is at schema version ", current,
              "; this build of tessera reads version ", known,
              ": open it once with tessera-planner --db to migrate it"));
        }
        return absl::OkStatus();
      });
}

absl::Status ApplyMigrations(Database& db,
                             const std::vector<Migration>& migrations) {
  TESSERA_RETURN_IF_ERROR(CheckOrder(migrations));
  int64_t current = 0;
  TESSERA_RETURN_IF_ERROR(RunInTransaction(
      db, TransactionMode::kDeferred, [&](Database& d) -> absl::Status {
        TESSERA_ASSIGN_OR_RETURN(auto applied, AppliedMigrations(d));
        TESSERA_ASSIGN_OR_RETURN(current, CheckApplied(applied, migrations));
        return absl::OkStatus();
      }));
  for (const Migration& m : migrations) {
    if (m.version <= current) continue;
    TESSERA_RETURN_IF_ERROR(ApplyOne(db, m, migrations));
  }
  return absl::OkStatus();
}

}  // namespace tessera::db
