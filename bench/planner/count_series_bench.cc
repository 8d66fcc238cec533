// Prints how the cost model, with each stack's default coefficients,
// predicts published runs of one model at several GPU counts
// (tests/data/measured_published.json, planner/validation/count_series.h):
// per series and count, measured and predicted tokens/s per GPU, the error,
// the scaling against the series' smallest count, and predicted watts per
// GPU (no row publishes measured power).
//
//   build/bench/planner/count_series_bench [FILE]
#include <iostream>
#include <string>

#include "planner/validation/count_series.h"
#include "planner/validation/published_runs.h"

int main(int argc, char** argv) {
  std::string path =
      std::string(TESSERA_SOURCE_DIR) + "/tests/data/measured_published.json";
  if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
    std::cerr << "usage: count_series_bench [FILE]\n";
    return 2;
  }
  if (argc == 2) path = argv[1];
  absl::StatusOr<tessera::planner::PublishedRuns> runs =
      tessera::planner::LoadPublishedRuns(path);
  if (!runs.ok()) {
    std::cerr << "count_series_bench: " << runs.status().message() << "\n";
    return 1;
  }
  const tessera::planner::ValidationReport report =
      tessera::planner::ValidatePublishedRuns(*runs);
  tessera::planner::PrintCountSeries(
      tessera::planner::SeriesByGpuCount(report), std::cout);
  return 0;
}
