// A fit as a calibration file (calibration/calibration_file.h): the fitted
// coefficients with their prior, how sure the fit is of each, and the step
// time, memory and power errors before and after it.
//
//   TESSERA_ASSIGN_OR_RETURN(CalibrationFit fit, FitCalibration(samples, prior, {}));
//   CalibrationFile f = MakeCalibrationFile("torchtitan", {}, gpu, prior, &fit);
//   std::string text = CalibrationFileJson(f);
#pragma once

#include <string>
#include <vector>

#include "core/gpu.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/calibration/calibration_file.h"
#include "costmodel/fit/calibration_fit.h"

namespace tessera::costmodel {

// A file from a fit (`fit` may be null: collectives only, the prior as is).
CalibrationFile MakeCalibrationFile(const std::string& stack,
                                    const std::vector<std::string>& options,
                                    const GpuSpec& gpu, const Calibration& prior,
                                    const CalibrationFit* fit);

}  // namespace tessera::costmodel
