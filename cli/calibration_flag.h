// The calibration `tessera plan` and `tessera predict` use: the workload's
// stack defaults, or a calibration file (`--calibration FILE`, from
// `tessera calibrate`). A file fitted for the same stack (and options) is
// used whole; one fitted for another stack lends its hardware coefficients
// and measured collectives to this stack's defaults, and the note says so. A
// file fitted on another GPU is an error.
//
//   TESSERA_ASSIGN_OR_RETURN(CommandCalibration c,
//       CalibrationForCommand(workload, calibration_path, false, std::cerr));
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "core/workload.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/fit/prediction_uncertainty.h"

namespace tessera::cli {

// What `plan` and `predict` rank with: the calibration, and how uncertain its
// predictions are (prediction_uncertainty.h: the fit's spreads for a file
// used whole, the defaults' otherwise).
struct CommandCalibration {
  costmodel::Calibration calibration;
  costmodel::PredictionUncertainty uncertainty;
};

// The calibration for `workload`; a command that may instead ask the planner
// service (`--planner`) says so: --calibration with it is an error (the service
// uses its own calibration), and the note, if any, goes to `err` as
// "note: ...".
absl::StatusOr<CommandCalibration> CalibrationForCommand(
    const Workload& workload, const std::optional<std::string>& path,
    bool on_planner_service, std::ostream& err);

}  // namespace tessera::cli
