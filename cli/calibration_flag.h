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
#include <ostream>
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

// CalibrationForWorkload for a command that may instead ask the planner
// service (`--planner`): --calibration with it is an error (the service
// uses its own calibration), and the note, if any, goes to `err` as
// "note: ...".
absl::StatusOr<planner::Calibration> CalibrationForCommand(
    const Workload& workload, const std::optional<std::string>& path,
    bool on_planner_service, std::ostream& err);

}  // namespace tessera::cli
