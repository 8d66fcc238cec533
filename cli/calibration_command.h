// `tessera calibration import|export`: calibration files (what `tessera
// calibrate` writes) into and out of the planner service, which keeps them
// per GPU and plans every later study, plan and prediction on that GPU from
// them (service/calibration_exchange.h).
//
//   tessera calibration import cluster.calibration.json
//   tessera calibration export --gpu h100-sxm --out h100.calibration.json
//
// `tessera submit --calibration FILE` imports one with a study.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tessera/v1/specs.pb.h"

namespace tessera::cli {

int RunCalibration(const std::vector<std::string>& args, std::ostream& out,
                   std::ostream& err);

// The import request for the file at `path` (its text, and its path as the
// source); NOT_FOUND or UNAVAILABLE naming the path when it cannot be read.
absl::StatusOr<v1::ImportCalibrationRequest> ImportRequestOfFile(
    const std::string& path);

}  // namespace tessera::cli
