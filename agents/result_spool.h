// The agent's on-disk spool of finished trial results (issue 15: no
// finished result is dropped). A result is written here, durably, before its
// first report and removed once the planner acknowledged it (OK,
// ALREADY_EXISTS) or refused it for good (lease gone, not retryable); what
// is left when the agent stops (its report never got through within the
// drain timeout) is reported again when it starts.
//
// One file per trial, `trial-<id>.json`, holding the result JSON exactly as
// reported; mode 0600 in a folder of mode 0700. Writes go to a temporary
// file in the same folder that is fsynced and renamed over the entry, then
// the folder is fsynced: a crash leaves the old entry, the new one or a
// leftover temporary file (List clears those), never half a result.
// One agent per spool folder; not thread-safe (the agent's main loop uses
// it).
//
//   TESSERA_ASSIGN_OR_RETURN(ResultSpool spool, ResultSpool::Open(dir));
//   TESSERA_RETURN_IF_ERROR(spool.Put(trial_id, result_json));
//   ... report it ...
//   TESSERA_RETURN_IF_ERROR(spool.Remove(trial_id));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tessera::agents {

// The planner refuses a result_json larger than its kMaxReportBytes
// (service/measurement_check.h, 1 MiB); agents do not link planner
// code, so the same number is repeated here.
inline constexpr int64_t kMaxSpooledResultBytes = int64_t{1} << 20;

struct ResultSpoolOptions {
  // Results held at once; Put refuses a new trial's result past it.
  int64_t max_entries = 1000;
  // The largest result_json Put takes and List accepts.
  int64_t max_result_bytes = kMaxSpooledResultBytes;
};

// One spooled result.
struct SpooledResult {
  int64_t trial_id = 0;
  std::string result_json;
};

// What List found.
struct SpoolListing {
  std::vector<SpooledResult> results;  // by trial id
  // One per entry that could not be used (unreadable, too large, not JSON,
  // a bad name): each names the file and why; the file was renamed to
  // `<name>.bad` so that it is reported once, not at every start.
  std::vector<absl::Status> errors;
};

class ResultSpool {
 public:
  // The spool in folder `dir`, created with mode 0700 (its parents 0755)
  // when missing. UNAVAILABLE naming the folder when it cannot be created;
  // FAILED_PRECONDITION when `dir` exists but is not a folder, is another
  // user's or is writable by group or others (its entries are reported as
  // this agent's results).
  static absl::StatusOr<ResultSpool> Open(std::string dir,
                                          ResultSpoolOptions options = {});

  const std::string& dir() const { return dir_; }
  // The entry file of `trial_id` (whether or not it exists).
  std::string PathOf(int64_t trial_id) const;

  // Writes `result_json` as `trial_id`'s entry, durably (fsync of the file
  // and of the folder), replacing an earlier one. INVALID_ARGUMENT for a
  // trial id below 1, a result over max_result_bytes or not JSON;
  // RESOURCE_EXHAUSTED when max_entries other trials are spooled;
  // UNAVAILABLE naming the path when the disk refuses. Nothing is left
  // behind on error.
  absl::Status Put(int64_t trial_id, absl::string_view result_json);

  // Deletes `trial_id`'s entry (and fsyncs the folder). OK when there is
  // none; UNAVAILABLE naming the path otherwise.
  absl::Status Remove(int64_t trial_id);

  // The spooled results, by trial id. Deletes leftover temporary files of
  // interrupted Puts; moves unusable entries aside (SpoolListing::errors).
  // UNAVAILABLE only when the folder itself cannot be read.
  absl::StatusOr<SpoolListing> List();

 private:
  ResultSpool(std::string dir, ResultSpoolOptions options);
  // The number of entries (files named like one), `trial_id`'s excepted.
  absl::StatusOr<int64_t> CountEntriesExcept(int64_t trial_id) const;
  absl::Status SyncDir() const;

  std::string dir_;
  ResultSpoolOptions options_;
};

}  // namespace tessera::agents
