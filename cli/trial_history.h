// Trials across studies grouped by what they ran (`tessera history`): one
// group per model, GPU, GPU count and layout, with what its trials measured,
// so that "what did 8-way TP on these nodes give last month" is one row.
// Groups come best first: by their best measured tokens/s, then those with
// no ok trial by how many trials they had.
//
//   std::vector<LayoutHistory> groups = GroupByLayout(response.trials());
//   PrintHistoryTable(groups, std::cout);
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/trial_table.h"
#include "nlohmann/json.hpp"
#include "tessera/v1/service.pb.h"

namespace tessera::cli {

struct LayoutHistory {
  std::string model;
  std::string gpu;
  int64_t gpus = 0;  // tp * pp * cp * dp; 0 when dp is not resolved
  v1::Layout layout;
  std::vector<int64_t> trial_ids;  // ascending
  std::vector<int64_t> study_ids;  // distinct, ascending
  int64_t ok = 0;                  // trials that ran ok
  int64_t failed = 0;              // oom, nan, timeout, crash, invalid
  // Over the ok trials; absent when none (watts: none measured power).
  std::optional<double> best_tokens_per_s;
  int64_t best_trial_id = 0;
  std::optional<double> median_tokens_per_s;
  std::optional<double> best_mfu;
  std::optional<double> median_watts_per_gpu;
  std::optional<double> best_tokens_per_joule;
  int64_t last_unix_ms = 0;  // the latest finished (else created) time
};

// One group per model, GPU, GPU count and layout (CompactLayout) of
// `trials`, best first (see above); numbers over the ok trials only.
std::vector<LayoutHistory> GroupByLayout(const Trials& trials);

// The median of `values` (the mean of the middle two for an even count);
// absent for none.
std::optional<double> Median(std::vector<double> values);

// Columns: layout, model, gpu, GPUs, trials, ok, failed, best tokens/s (its
// trial), median tokens/s, best MFU, median W/GPU, best tokens/J, studies,
// last; lines fit `max_width` characters (cutting, then dropping the least
// important columns) when it is not 0 (every column).
void PrintHistoryTable(const std::vector<LayoutHistory>& groups,
                       std::ostream& out, size_t max_width = 0);
// The same columns with raw numbers (empty when absent), plus best_trial_id
// and trial_ids; ids space-separated.
void PrintHistoryCsv(const std::vector<LayoutHistory>& groups,
                     std::ostream& out);
// [{"layout": L, "model", "gpu", "gpus", "trials": [ids], "studies": [ids],
//   "ok", "failed", "best_tokens_per_s"|null, "best_trial_id"|null,
//   "median_tokens_per_s"|null, "best_mfu"|null,
//   "median_watts_per_gpu"|null, "best_tokens_per_joule"|null, "last"}]
nlohmann::json HistoryJson(const std::vector<LayoutHistory>& groups);

}  // namespace tessera::cli
