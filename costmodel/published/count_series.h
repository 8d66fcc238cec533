// The cost model against published runs of one model at several GPU counts
// (tests/data/measured_published.json): rows of one source that share the
// model, GPU, sequence length, precision, stack options and every layout
// knob but dp and gradient accumulation form a series by GPU count. Per
// count: measured and predicted tokens/s per GPU, the error, and the scaling
// (tokens/s per GPU over the series' smallest count, measured and
// predicted), which checks the fall of per-GPU throughput with scale that
// the GPU count search (costmodel/search/scale_search.h) relies on, apart from
// the absolute calibration. Predicted watts per GPU are listed too; no row of
// the file publishes measured power (the table says so).
//
// Most published series are weak scaling (the global batch grows with the
// GPUs); the planner's count search keeps the global batch. Both change
// what each GPU computes per step and how much communication hides.
//
//   ValidationReport report = ValidatePublishedRuns(runs);
//   std::vector<CountSeries> series = SeriesByGpuCount(report);
//   PrintCountSeries(series, std::cout);
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "costmodel/published/published_runs.h"

namespace tessera::costmodel {

struct CountSeries {
  std::string key;  // what the rows share
  // By GPUs ascending (then row order); rows at the same count all kept.
  std::vector<const ValidatedRun*> rows;
};

// The series of >= 2 distinct GPU counts among `report`'s feasible rows,
// ordered by key. Points into `report`, which must outlive them.
std::vector<CountSeries> SeriesByGpuCount(const ValidationReport& report);

struct CountSeriesSummary {
  int64_t series = 0;
  int64_t rows = 0;
  double mape = 0;           // tokens/s per GPU, mean |error|
  int64_t within_10pct = 0;  // rows with |error| <= 10%
  // Rows above each series' smallest count: |predicted scaling / measured
  // scaling - 1|, mean, and how many within 10%.
  int64_t scaling_rows = 0;
  double scaling_mape = 0;
  int64_t scaling_within_10pct = 0;
};

CountSeriesSummary SummarizeCountSeries(const std::vector<CountSeries>& series);

// One table per series (count, global batch, layout, measured and predicted
// tokens/s per GPU, error, scaling measured and predicted, predicted and
// measured W/GPU), then the summary.
void PrintCountSeries(const std::vector<CountSeries>& series,
                      std::ostream& out);

}  // namespace tessera::costmodel
