// Measurement files for `tessera calibrate`: JSON Lines, one measured run per
// line:
//
//   {"spec": <a StudySpec: model, cluster, training with stack and precision>,
//    "layout": "tp=2,pp=1,zero=1,micro_batch=2",
//    "measured": {"step_time_s": 4.1, "peak_memory_gib": 71.2, ...},
//    "weight": 1}
//
// `measured` holds any of step_time_s or tokens_per_s_per_gpu (one is
// required: the step time is tokens per step / (tokens/s/GPU x GPUs)),
// peak_memory_gib, compute_s, comm_s, exposed_comm_s, watts_per_gpu; weight
// (optional, default 1) says how much a run counts. Blank lines and lines
// starting with # are skipped.
//
// Two other forms are read as the same measurement:
//   - {"spec": ..., "trial": <tessera-trial's result JSON>, "weight": 1}: the
//     spec gives the model, the GPU and GPUs per node, the stack and the
//     precision the trial ran with; its world (ranks), global batch,
//     sequence length, layout and measured values are the result's;
//   - `tessera trials -o json` (a JSON array, or one row per line): each ok
//     trial's "ran" spec (its study at the trial's scale), layout and
//     measured values; other states are skipped.
// From both, as the planner's own fits take them: the median step time
// weighted by the measured steps, the compute/communication split and peak
// memory only from cuda trials, power where measured.
//
// A malformed line (not JSON, a missing or unknown field, a value that is not
// a positive number, a spec whose JSON mapping fails) is an error naming the
// file, the line and the field, and nothing is read. A run the cost model
// cannot express (an unknown stack, a spec out of range, a layout that does
// not resolve or that its stack cannot run) is skipped, with the reason.
//
//   TESSERA_ASSIGN_OR_RETURN(MeasurementFile m, ReadMeasurements("runs.jsonl"));
//   // m.samples for costmodel::FitCalibration; m.skipped to tell the user.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "costmodel/fit/calibration_fit.h"

namespace tessera::cli {

struct SkippedMeasurement {
  int64_t line = 0;
  std::string reason;
};

struct MeasurementFile {
  std::string path;
  std::vector<costmodel::CalibrationSample> samples;
  std::vector<int64_t> sample_lines;  // the line of each sample
  std::vector<SkippedMeasurement> skipped;
};

// Parses `text` read from `path`.
absl::StatusOr<MeasurementFile> ParseMeasurements(absl::string_view text,
                                                  const std::string& path);
// Reads and parses the file at `path`.
absl::StatusOr<MeasurementFile> ReadMeasurements(const std::string& path);

}  // namespace tessera::cli
