#include "planner/stacks/stack_calibration.h"

#include "core/status_macros.h"

namespace tessera::planner {
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

}  // namespace tessera::planner
