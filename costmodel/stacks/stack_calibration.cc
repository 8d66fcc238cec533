#include "costmodel/stacks/stack_calibration.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace tessera::costmodel {
namespace {

// Sets every coefficient of `values` (checked when the stack file was read).
void Apply(const std::map<std::string, double>& values, Calibration* c) {
  for (const auto& [name, value] : values) (void)c->Set(name, value);
}

}  // namespace

absl::StatusOr<Calibration> StackCalibration(
    const TrainingStack& stack, const GpuSpec& gpu,
    const std::vector<std::string>& option_changes) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<const StackOption*> options,
                           EnabledOptions(stack, option_changes));
  Calibration c;
  Apply(stack.coefficients, &c);
  auto arch = stack.coefficients_by_architecture.find(gpu.architecture);
  if (arch != stack.coefficients_by_architecture.end()) {
    Apply(arch->second, &c);
  }
  for (const StackOption* o : options) Apply(o->coefficients, &c);
  return c;
}

absl::StatusOr<Calibration> DefaultCalibration(const Workload& w) {
  TESSERA_ASSIGN_OR_RETURN(const TrainingStack* stack,
                           FindStack(w.training.stack));
  return StackCalibration(*stack, w.cluster.gpu, w.training.stack_options);
}

bool FittedForStack(const Workload& w, const CalibrationFile& file) {
  return file.stack == w.training.stack &&
         file.stack_options == w.training.stack_options;
}

absl::StatusOr<Calibration> CalibrationFromFile(const Workload& w,
                                                const CalibrationFile& file,
                                                absl::string_view source,
                                                std::string* note) {
  if (note != nullptr) note->clear();
  if (!file.gpu.empty() && file.gpu != w.cluster.gpu.name) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, " was fitted on gpu '", file.gpu, "', the workload runs on '",
        w.cluster.gpu.name, "'"));
  }
  if (FittedForStack(w, file)) return file.calibration;
  TESSERA_ASSIGN_OR_RETURN(const Calibration defaults, DefaultCalibration(w));
  if (note != nullptr) {
    *note = absl::StrCat("calibration ", source, " was fitted for the ",
                         file.stack,
                         " stack: its hardware coefficients and measured "
                         "collectives are used with the ",
                         w.training.stack, " stack's defaults");
  }
  Calibration c = WithHardwareOf(file.calibration, defaults);
  c.collectives = file.calibration.collectives;
  return c;
}

}  // namespace tessera::costmodel
