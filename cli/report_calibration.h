// The calibration section of the study pages (`tessera report`, the
// planner's dashboard): each coefficient the study's recommendation was
// made with, beside the default of the study's stack on its GPU, marked
// "fitted" where trials (or an imported calibration) moved it and "default"
// where they did not, with what it means (costmodel/calibration/
// coefficients.inc) and whether it sits at the bound a fit allows (a value
// like fsdp_bandwidth_efficiency 0.0166 then reads as "pushed to its floor
// of 0.01", not as a measurement).
//
//   std::string html = CalibrationSection(study, recommendation);
#pragma once

#include <string>

#include "tessera/v1/service.pb.h"

namespace tessera::cli {

// An <h2>, the calibration line and a table: coefficient, value, default,
// "fitted" / "default", the range a fit allows, its meaning. Each row
// carries data-coefficient, data-value, data-default-value and
// data-fitted="true|false". Without the study's workload (a spec the cost
// model cannot read) the defaults show as "—" and nothing is marked.
std::string CalibrationSection(const v1::GetStudyResponse& study,
                               const v1::Recommendation& recommendation);

}  // namespace tessera::cli
