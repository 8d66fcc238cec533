// The calibration `tessera plan` and `tessera predict` use: the workload's
// stack defaults, or a calibration file (`--calibration FILE`, from
// `tessera calibrate`). A file fitted for the same stack (and options) is
// used whole; one fitted for another stack lends its hardware coefficients
// and measured collectives to this stack's defaults, and the note says so. A
// file fitted on another GPU is an error.
//
//   TESSERA_ASSIGN_OR_RETURN(planner::Calibration c,
//       CalibrationForWorkload(workload, calibration_path, &note));
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/workload.h"
#include "planner/calibration/calibration.h"

namespace tessera::cli {

// `note` (may be null) gets one line for the user when the file's stack
// differs; empty otherwise.
absl::StatusOr<planner::Calibration> CalibrationForWorkload(
    const Workload& workload, const std::optional<std::string>& path,
    std::string* note);

}  // namespace tessera::cli
