#include "service/trial_command_check.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/command_template.h"
#include "core/status_macros.h"
#include "core/trial_backend.h"
#include "service/recalibration.h"
#include "costmodel/stacks/training_stack.h"

namespace tessera::service {
namespace {

// The layout fields `stack` lets the search vary, as placeholder names.
std::vector<std::string> VariedFields(const costmodel::TrainingStack& stack) {
  const costmodel::StackLayouts& l = stack.layouts;
  std::vector<std::string> fields = {"micro_batch"};
  if (l.tensor_parallel) fields.push_back("tp");
  if (l.tensor_parallel &&
      l.sequence_parallel == costmodel::SequenceParallel::kOptional) {
    fields.push_back("sp");
  }
  if (l.pipeline_parallel) fields.push_back("pp");
  if (l.interleaved_pipeline) fields.push_back("vpp");
  if (l.context_parallel) fields.push_back("cp");
  if (l.zero_stages.size() > 1) fields.push_back("zero");
  if (l.hsdp) fields.push_back("shard_group");
  if (l.recompute.size() > 1) fields.push_back("recompute");
  return fields;
}

}  // namespace

absl::Status CheckTrialBackendRunsStack(const TrialOptions& options,
                                        const Workload& workload) {
  if (options.backend.empty()) return absl::OkStatus();
  TESSERA_ASSIGN_OR_RETURN(const TrialBackend* backend,
                           FindTrialBackend(options.backend));
  if (!backend->trial_stack.empty()) return absl::OkStatus();
  if (workload.training.stack == kTrialStack) {
    return absl::InvalidArgumentError(absl::StrCat(
        "study.training.stack: '", kTrialStack,
        "' is Tessera's own executor (trials.backend cpu or cuda); backend '",
        backend->name, "' runs your framework: name its stack"));
  }
  if (backend->launcher != TrialLauncher::kCommand) return absl::OkStatus();
  TESSERA_ASSIGN_OR_RETURN(const costmodel::TrainingStack* stack,
                           costmodel::FindStack(workload.training.stack));
  absl::StatusOr<std::vector<std::string>> used =
      CommandTemplatePlaceholders(options.command);
  if (!used.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("study.trials.command: ", used.status().message()));
  }
  auto uses = [&](absl::string_view name) {
    return std::find(used->begin(), used->end(), name) != used->end();
  };
  if (uses("config")) return absl::OkStatus();
  for (const std::string& field : VariedFields(*stack)) {
    if (!uses(field)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "study.trials.command: the ", stack->name, " stack varies ", field,
          " between layouts, but the command has no {", field,
          "} (nor {config}): every trial would run the same ", field));
    }
  }
  return absl::OkStatus();
}

}  // namespace tessera::service
