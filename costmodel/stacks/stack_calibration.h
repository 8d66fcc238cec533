// The coefficient defaults a run starts from: coefficients.inc's generic
// values, then the training stack's own, then the stack's for the GPU's
// architecture, then those of each stack option the run has on (in the
// stack file's order). This is the prior every prediction uses until trials
// or a calibration file say otherwise.
//
//   TESSERA_ASSIGN_OR_RETURN(Calibration c, DefaultCalibration(workload));
//   LayoutEvaluation e = PredictLayout(workload, layout, c);
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/gpu.h"
#include "core/workload.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/calibration/calibration_file.h"
#include "costmodel/stacks/training_stack.h"

namespace tessera::costmodel {

// The defaults of `stack` on `gpu` with the option `changes` ("NAME",
// "no-NAME"); INVALID_ARGUMENT for an unknown option.
absl::StatusOr<Calibration> StackCalibration(
    const TrainingStack& stack, const GpuSpec& gpu,
    const std::vector<std::string>& option_changes);

// The defaults of the workload's stack, GPU and stack options;
// INVALID_ARGUMENT naming training.stack or training.stack_options.
absl::StatusOr<Calibration> DefaultCalibration(const Workload& workload);

// What `workload` plans with from a calibration file: the file's calibration
// whole when it was fitted for the workload's stack and stack options;
// otherwise the stack's defaults with the file's hardware coefficients
// (WithHardwareOf) and measured collectives, and `*note` (when given; cleared
// otherwise) says so. INVALID_ARGUMENT for a file fitted on another GPU
// ("`source` was fitted on gpu 'a100-sxm-40g', the workload runs on ...").
absl::StatusOr<Calibration> CalibrationFromFile(const Workload& workload,
                                                const CalibrationFile& file,
                                                absl::string_view source,
                                                std::string* note);

// Whether `file` is used whole for `workload` (its stack and options).
bool FittedForStack(const Workload& workload, const CalibrationFile& file);

}  // namespace tessera::costmodel
