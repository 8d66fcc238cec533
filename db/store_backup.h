// An online backup of the trial store: a consistent copy of a store that a
// running planner keeps writing (SQLite's backup API over a read-only
// connection; with WAL the planner is not blocked), checked with PRAGMA
// quick_check before it is called done. Restoring is copying the file back
// while the planner is stopped: a backup is an ordinary store file.
//
//   tessera-planner --db tessera.db --backup /backups/tessera-2026-11-26.db
#pragma once

#include <string>

#include "absl/status/status.h"

namespace tessera::db {

// Copies the store at `store_path` into a new file `backup_path` (mode
// 0600). InvalidArgument when `backup_path` exists (a backup never
// overwrites) or is the store itself; NotFound when the store does not
// exist; the copy's problems (DataLoss from its quick_check) otherwise, with
// the partial file removed.
absl::Status BackupStore(const std::string& store_path,
                         const std::string& backup_path);

}  // namespace tessera::db
