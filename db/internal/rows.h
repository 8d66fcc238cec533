// How the SQLite store's records map to rows: the column lists its SELECTs
// use, readers from a stepped Statement, and loaders of one record by id.
// Private to db/ (the SQLite store's files).
//
//   TESSERA_ASSIGN_OR_RETURN(Trial trial, LoadTrial(db, trial_id));
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "db/sqlite.h"
#include "db/trial_store.h"

namespace tessera::db::internal {

// Times are stored as microseconds since the Unix epoch.
inline int64_t ToMicros(absl::Time t) { return absl::ToUnixMicros(t); }
inline absl::Time FromMicros(int64_t us) { return absl::FromUnixMicros(us); }

// SELECT lists, in the order the readers expect; the trial list qualifies its
// columns with the alias t.
extern const char kStudyColumns[];
extern const char kTrialColumns[];
extern const char kAgentColumns[];
extern const char kProbeColumns[];
extern const char kCalibrationColumns[];

// Read the current row of a statement that selected the matching columns.
// DataLoss when a stored value cannot be what the schema promises.
absl::StatusOr<Study> ReadStudy(const Statement& row);
absl::StatusOr<Trial> ReadTrial(const Statement& row);
absl::StatusOr<Agent> ReadAgent(const Statement& row);
Probe ReadProbe(const Statement& row);
// id, cluster, collective, nodes, gpus_per_node, bytes, busbw_gbs,
// agent_ids, measured_at_us.
CollectiveSample ReadCollectiveSample(const Statement& row);
absl::StatusOr<Calibration> ReadCalibration(const Statement& row);

// One record by id; NotFound ("study 7: not found") when absent.
absl::StatusOr<Study> LoadStudy(Database& db, int64_t study_id);
absl::StatusOr<Trial> LoadTrial(Database& db, int64_t trial_id);
absl::StatusOr<Agent> LoadAgent(Database& db, absl::string_view agent_id);

}  // namespace tessera::db::internal
