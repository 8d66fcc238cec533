#include "cli/calibration_flag.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "costmodel/calibration/calibration_file.h"
#include "costmodel/stacks/stack_calibration.h"

namespace tessera::cli {

namespace {

// The calibration and, when `path` names a file used whole, that file.
absl::StatusOr<costmodel::Calibration> Resolve(
    const Workload& w, const std::optional<std::string>& path,
    std::string* note, std::optional<costmodel::CalibrationFile>* whole) {
  if (note != nullptr) note->clear();
  TESSERA_ASSIGN_OR_RETURN(costmodel::Calibration defaults,
                           costmodel::DefaultCalibration(w));
  if (!path.has_value()) return defaults;
  absl::StatusOr<costmodel::CalibrationFile> file =
      costmodel::ReadCalibrationFile(*path);
  if (!file.ok()) {
    return absl::Status(
        file.status().code(),
        absl::StrCat("--calibration: ", file.status().message()));
  }
  absl::StatusOr<costmodel::Calibration> c =
      costmodel::CalibrationFromFile(w, *file, *path, note);
  if (!c.ok()) {
    return absl::Status(c.status().code(),
                        absl::StrCat("--calibration: ", c.status().message()));
  }
  if (whole != nullptr && costmodel::FittedForStack(w, *file)) *whole = *file;
  return c;
}

}  // namespace

absl::StatusOr<CommandCalibration> CalibrationForCommand(
    const Workload& w, const std::optional<std::string>& path,
    bool on_planner_service, std::ostream& err) {
  if (path.has_value() && on_planner_service) {
    return absl::InvalidArgumentError(
        "--calibration: not with --planner (the planner service uses its "
        "own)");
  }
  std::string note;
  std::optional<costmodel::CalibrationFile> whole;
  TESSERA_ASSIGN_OR_RETURN(costmodel::Calibration c,
                           Resolve(w, path, &note, &whole));
  if (!note.empty()) err << "note: " << note << "\n";
  return CommandCalibration{
      .calibration = std::move(c),
      .uncertainty =
          whole.has_value()
              ? costmodel::PredictionUncertaintyOf(*whole, w.training.precision)
              : costmodel::DefaultPredictionUncertainty(w.training.precision)};
}

}  // namespace tessera::cli
