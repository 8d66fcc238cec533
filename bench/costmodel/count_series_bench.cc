// Prints how the cost model, with each stack's default coefficients,
// predicts published runs of one model at several GPU counts
// (tests/data/measured_published.json, costmodel/published/count_series.h):
// per series and count, measured and predicted tokens/s per GPU, the error,
// the scaling against the series' smallest count, and predicted watts per
// GPU (no row publishes measured power).
//
//   build/bench/costmodel/count_series_bench [FILE]
#include <iostream>
#include <string>

#include "costmodel/published/count_series.h"
#include "costmodel/published/published_runs.h"

int main(int argc, char** argv) {
  std::string path =
      std::string(TESSERA_SOURCE_DIR) + "/tests/data/measured_published.json";
  if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
    std::cerr << "usage: count_series_bench [FILE]\n";
    return 2;
  }
  if (argc == 2) path = argv[1];
  absl::StatusOr<tessera::costmodel::PublishedRuns> runs =
      tessera::costmodel::LoadPublishedRuns(path);
  if (!runs.ok()) {
    std::cerr << "count_series_bench: " << runs.status().message() << "\n";
    return 1;
  }
  const tessera::costmodel::ValidationReport report =
      tessera::costmodel::ValidatePublishedRuns(*runs);
  tessera::costmodel::PrintCountSeries(
      tessera::costmodel::SeriesByGpuCount(report), std::cout);
  return 0;
}
