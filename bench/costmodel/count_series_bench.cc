// Prints how the cost model, with each stack's default coefficients,
// predicts published runs of one model at several GPU counts
// (tests/data/measured_published.json, costmodel/published/count_series.h):
// per series and count, measured and predicted tokens/s per GPU, the error,
// the scaling against the series' smallest count, and predicted watts per
// GPU (no row publishes measured power). --stack-file F (repeatable): stack
// file F replaces the built-in stack of its name, as in
// published_runs_bench, so that a changed stack's scaling is seen before it
// is built in.
//
//   build/bench/costmodel/count_series_bench [--stack-file F]... [FILE]
#include <cstring>
#include <iostream>
#include <string>

#include "costmodel/published/count_series.h"
#include "costmodel/published/published_runs.h"
#include "costmodel/stacks/training_stack.h"

int main(int argc, char** argv) {
  std::string path =
      std::string(TESSERA_SOURCE_DIR) + "/tests/data/measured_published.json";
  bool have_path = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--stack-file") == 0 && i + 1 < argc) {
      const absl::Status s = tessera::costmodel::UseStackFile(argv[++i]);
      if (!s.ok()) {
        std::cerr << "count_series_bench: " << s.message() << "\n";
        return 2;
      }
    } else if (argv[i][0] == '-' || have_path) {
      std::cerr << "usage: count_series_bench [--stack-file F]... [FILE]\n";
      return 2;
    } else {
      path = argv[i];
      have_path = true;
    }
  }
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
