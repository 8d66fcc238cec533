#include "core/trial_backend.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tessera {

const std::vector<TrialBackend>& TrialBackends() {
  static const std::vector<TrialBackend>* const kBackends =
      new std::vector<TrialBackend>{
          {.name = "cpu"},
          {.name = "cuda",
           .ranks_on = RankDevice::kGpu,
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
           .ranks_on = RankDevice::kHostsDevice,
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

bool BackendRanksOn(absl::string_view name, RankDevice device) {
  absl::StatusOr<const TrialBackend*> b = FindTrialBackend(name);
  return b.ok() && (*b)->ranks_on == device;
}

bool RunsCommand(absl::string_view name) {
  absl::StatusOr<const TrialBackend*> b = FindTrialBackend(name);
  return b.ok() && (*b)->launcher == TrialLauncher::kCommand;
}

std::string TrialBackendNames() {
  std::vector<std::string> names;
  for (const TrialBackend& b : TrialBackends()) names.push_back(b.name);
  if (names.size() < 2) return absl::StrJoin(names, "");
  return absl::StrCat(absl::StrJoin(names.begin(), names.end() - 1, ", "),
                      " or ", names.back());
}

}  // namespace tessera
