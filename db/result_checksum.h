// A checksum of each stored trial result (issue 28, "Records checksummed"):
// SQLite's page checks (quick_check, the WAL's frame checksums) catch a
// damaged page, not a well-formed change to a value, such as a digit of a
// stored tokens/s edited outside the planner, which would then be served
// and recommended. Every write of a trial's result columns (a report, an
// invalidation) sets trials.result_checksum from the columns as stored, and
// the integrity check at open recomputes it for every result.
//
// The checksum is FNV-1a (64 bits, hex) over the result's columns with
// their types, numbers at full precision. It detects changes, not forgery:
// whoever can write the file can write a matching checksum too (the file is
// the planner's, mode 0600).
//
//   TESSERA_RETURN_IF_ERROR(SealResult(db, trial_id));   // after a write
//   TESSERA_RETURN_IF_ERROR(CheckResultChecksums(db, path));  // at open
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "db/sqlite.h"

namespace tessera::db {

// Sets trial `trial_id`'s result_checksum from its stored result columns
// (NULL when it has no result). Call inside the write's transaction.
absl::Status SealResult(Database& db, int64_t trial_id);

// Checks every stored result against its checksum; results stored before
// checksums existed (NULL) are sealed first when `seal_unsealed` (a
// writable store). DATA_LOSS naming `path` and the first trial whose
// result does not match.
absl::Status CheckResultChecksums(Database& db, absl::string_view path,
                                  bool seal_unsealed);

}  // namespace tessera::db
