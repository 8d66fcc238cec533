// A calibration as a file: what `tessera calibrate` writes from measurements
// and `tessera plan|predict --calibration` read. JSON:
//
//   {"format": "tessera-calibration/1",
//    "stack": "torchtitan", "stack_options": ["async-tp"],
//    "gpu": "h100-sxm", "architecture": "hopper",
//    "coefficients": {"gemm_peak_efficiency": {"value": 0.71, "prior": 0.8,
//        "fitted": true, "posterior_log_sd": 0.04, "unit": "",
//        "source": "..."}, ...},
//    "fit": {"samples": 12, "prior_log_sd": 0.3, "step_time_mape": {"prior": 0.21,
//        "fitted": 0.04}, "peak_memory_mape": {...}, "watts_mape": {...},
//        "posterior_covariance": {"coefficients": [...], "matrix": [[...]]},
//        "at_bound": [...], "warnings": [...]},
//    "fitted_from": ["runs.jsonl: 12 runs (2 skipped)", ...],
//    "collectives": [{"collective": "all_gather", "nodes": 2,
//        "gpus_per_node": 8, "bytes": 1048576, "busbw_gbs": 8.16}, ...]}
//
// Every coefficient is listed; on reading, every value must be known and in
// its range, and the errors name the file and the field.
//
//   TESSERA_ASSIGN_OR_RETURN(CalibrationFile f, ReadCalibrationFile(path));
//   LayoutEvaluation e = PredictLayout(workload, layout, f.calibration);
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/calibration/posterior_covariance.h"

namespace tessera::costmodel {

// The MAPE of one measured quantity before and after the fit.
struct QuantityError {
  int64_t samples = 0;
  double prior_mape = 0;
  double fitted_mape = 0;
};

struct CalibrationFile {
  std::string stack;
  std::vector<std::string> stack_options;
  std::string gpu;           // the GPU the measurements ran on
  std::string architecture;  // its architecture
  Calibration calibration;   // with the measured collectives, if any
  Calibration prior;
  std::vector<std::string> fitted;
  std::map<std::string, double> posterior_log_sd;
  PosteriorCovariance posterior_covariance;  // of the fitted coefficients
  // The fit's prior spread (CalibrationFit::prior_log_sd); 0: no fit.
  double prior_log_sd = 0;
  std::vector<std::string> at_bound;
  int64_t samples = 0;
  QuantityError step_time;
  std::optional<QuantityError> peak_memory;
  std::optional<QuantityError> watts;
  std::vector<std::string> warnings;
  std::vector<std::string> fitted_from;
};

// The file's text (two-space indented JSON).
std::string CalibrationFileJson(const CalibrationFile& file);

// Parses a file's text; `source` names it in errors ("cal.json: coefficients.
// gemm_peak_efficiency.value: 2 is outside [0.05, 1]").
absl::StatusOr<CalibrationFile> ParseCalibrationFile(absl::string_view text,
                                                     absl::string_view source);
// Reads and parses the file at `path`.
absl::StatusOr<CalibrationFile> ReadCalibrationFile(const std::string& path);

}  // namespace tessera::costmodel
