#include "core/trial_backend.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tessera {

const std::vector<TrialBackend>& TrialBackends() {
  static const std::vector<TrialBackend>* const kBackends =
      new std::vector<TrialBackend>{
          {.name = "cpu"},
          {.name = "cuda",
           .process_per_rank = true,
           .times_comm_apart = true,
           .measures_model_memory = true,
           .runs_on_named_gpu = true,
           .one_agent_sweep = true},
          // The user's framework: it reports step times (and its own peak
          // memory, which is not the cost model's count); the agent measures
          // power on GPUs itself.
          {.name = "command",
           .launcher = TrialLauncher::kCommand,
           .trial_stack = "",
           .any_device = true,
           .process_per_rank = false,
           .measures_comm = false,
           .runs_on_named_gpu = true},
      };
  return *kBackends;
}

absl::StatusOr<const TrialBackend*> FindTrialBackend(absl::string_view name) {
  for (const TrialBackend& b : TrialBackends()) {
    if (b.name == name) return &b;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("'", name, "' is not ", TrialBackendNames()));
}

std::string TrialBackendNames() {
  std::vector<std::string> names;
  for (const TrialBackend& b : TrialBackends()) names.push_back(b.name);
  if (names.size() < 2) return absl::StrJoin(names, "");
  return absl::StrCat(absl::StrJoin(names.begin(), names.end() - 1, ", "),
                      " or ", names.back());
}

}  // namespace tessera
