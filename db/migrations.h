// The store's schema as forward-only, versioned migrations. The .sql files in
// db/migrations/ (NNNN_name.sql) are embedded into the library at build time
// (db/embed_migrations.cmake), so a binary needs no data files. At start-up
// ApplyMigrations runs the ones a database lacks, each in its own
// transaction, and records each in schema_migrations.
//
//   TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Database> db,
//                            Database::Open(path, DatabaseOptions{}));
//   TESSERA_RETURN_IF_ERROR(ApplyMigrations(*db, EmbeddedMigrations()));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "db/sqlite.h"

namespace tessera::db {

struct Migration {
  int64_t version = 0;  // from the file name's number; strictly increasing
  std::string name;     // the file name without .sql, e.g. "0001_initial"
  std::string sql;      // one or more statements
};

// The migrations of db/migrations/, in version order (generated code).
const std::vector<Migration>& EmbeddedMigrations();

// Brings `db` to the last version of `migrations` (sorted by version, each
// version once). Each missing migration runs in its own IMMEDIATE transaction
// together with its schema_migrations row, so a failure leaves the database at
// the previous version. A database already at the last version is left as it
// is. Errors: FailedPrecondition when the database has a version newer than
// the last one known here (written by a newer Tessera), or a known version
// recorded under another name (a diverged schema); InvalidArgument for a
// badly ordered list; the sqlite error of a failing script.
absl::Status ApplyMigrations(Database& db,
                             const std::vector<Migration>& migrations);

// For a reader that must not write (a read-only store): OK when `db` is at
// the last version of `migrations`, without creating or changing anything.
// FailedPrecondition naming both versions otherwise: "not a Tessera store"
// (no schema_migrations table), older ("open it once with tessera-planner
// to migrate it"), newer, or diverged.
absl::Status CheckMigrated(Database& db,
                           const std::vector<Migration>& migrations);

// The highest version recorded in schema_migrations; 0 for a fresh database.
absl::StatusOr<int64_t> SchemaVersion(Database& db);

}  // namespace tessera::db
