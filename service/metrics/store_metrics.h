// What the planner's history holds now, as gauges read from the store at
// each scrape: studies by status, trials by state (across all studies),
// agents by state, and the SQLite database's size on disk.
//
//   TESSERA_ASSIGN_OR_RETURN(std::vector<MetricFamily> families,
//                            StoreMetrics(store, "tessera.db"));
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "db/trial_store.h"
#include "service/metrics/exposition.h"

namespace tessera::service::metrics {

// tessera_studies{status}, tessera_trials{state} and tessera_agents{state}
// with every status or state present (0 when none), and
// tessera_store_size_bytes: the database file plus its write-ahead log
// ("<db_path>-wal", 0 when absent). The store's errors pass through.
absl::StatusOr<std::vector<MetricFamily>> StoreMetrics(
    db::TrialStore& store, const std::string& db_path);

}  // namespace tessera::service::metrics
