// Prints how the cost model, with each stack's default coefficients, predicts
// every published run of tests/data/measured_published.json: per source and
// precision, rows called infeasible, tokens/s/GPU MAPE, median (signed) and
// worst error, peak memory error where measured, and the ranking within
// groups of runs that differ only in layout. With --rows, every row with its
// layout, prediction and the assumptions its mapping made.
//
// With --row N, row N in full: its mapping, assumptions and breakdown. With
// --stack-file F (repeatable), stack file F replaces the built-in stack of
// its name: how a changed stack is judged before it is built in. With
// --unstated-recompute none|selective|full, the rows that do not say which
// recomputation they ran are predicted with that one instead of the
// loader's assumption: how much an unstated setting can explain.
//
//   build/bench/costmodel/published_runs_bench [--rows] [--row N]
//       [--stack-file F]... [--unstated-recompute MODE] [FILE]
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>

#include "core/layout.h"
#include "costmodel/stacks/training_stack.h"
#include "costmodel/published/published_runs.h"

int main(int argc, char** argv) {
  bool rows = false;
  int row = -1;
  std::optional<tessera::Recompute> unstated_recompute;
  std::string path =
      std::string(TESSERA_SOURCE_DIR) + "/tests/data/measured_published.json";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rows") == 0) {
      rows = true;
    } else if (std::strcmp(argv[i], "--row") == 0 && i + 1 < argc) {
      row = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--stack-file") == 0 && i + 1 < argc) {
      const absl::Status s = tessera::costmodel::UseStackFile(argv[++i]);
      if (!s.ok()) {
        std::cerr << "published_runs_bench: " << s.message() << "\n";
        return 2;
      }
    } else if (std::strcmp(argv[i], "--unstated-recompute") == 0 &&
               i + 1 < argc) {
      const absl::StatusOr<tessera::Recompute> r =
          tessera::ParseRecompute(argv[++i]);
      if (!r.ok()) {
        std::cerr << "published_runs_bench: --unstated-recompute: "
                  << r.status().message() << "\n";
        return 2;
      }
      unstated_recompute = *r;
    } else if (argv[i][0] == '-') {
      std::cerr << "usage: published_runs_bench [--rows] [--row N] "
                   "[--stack-file F]... [--unstated-recompute "
                   "none|selective|full] [FILE]\n";
      return 2;
    } else {
      path = argv[i];
    }
  }
  absl::StatusOr<tessera::costmodel::PublishedRuns> runs =
      tessera::costmodel::LoadPublishedRuns(path);
  if (!runs.ok()) {
    std::cerr << "published_runs_bench: " << runs.status().message() << "\n";
    return 1;
  }
  if (unstated_recompute.has_value()) {
    tessera::costmodel::AssumeUnstatedRecompute(*unstated_recompute,
                                                &*runs);
  }
  const tessera::costmodel::ValidationReport report =
      tessera::costmodel::ValidatePublishedRuns(*runs);
  if (row >= 0) {
    for (const tessera::costmodel::ValidatedRun& v : report.rows) {
      if (v.run->index == row) {
        tessera::costmodel::PrintValidatedRun(v, std::cout);
        return 0;
      }
    }
    std::cerr << "published_runs_bench: row " << row << " is not mapped\n";
    return 1;
  }
  tessera::costmodel::PrintValidationReport(report, rows, std::cout);
  return 0;
}
