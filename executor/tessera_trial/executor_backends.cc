#include "executor/tessera_trial/executor_backends.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "executor/tessera_trial/cpu_trial.h"
#ifdef TESSERA_HAVE_CUDA
#include "executor/cuda/cuda_collective_probe.h"
#include "executor/cuda/cuda_trial.h"
#endif

namespace tessera::executor {

const std::vector<ExecutorBackend>& ExecutorBackends() {
  static const std::vector<ExecutorBackend> backends = {
      {.name = "cpu",
       .run_trial = &RunCpuTrial,
       .sweep_collectives = &RunCpuCollectiveSweep,
       .run_probes = &RunCpuProbes},
#ifdef TESSERA_HAVE_CUDA
      {.name = "cuda",
       .run_trial = &RunCudaTrial,
       .sweep_collectives = &RunCudaCollectiveSweep},
#else
      {.name = "cuda"},  // built without the CUDA toolkit
#endif
  };
  return backends;
}

absl::StatusOr<const ExecutorBackend*> FindExecutorBackend(
    absl::string_view name, ExecutorCapability capability) {
  std::vector<std::string> names;
  for (const ExecutorBackend& b : ExecutorBackends()) {
    if (name == b.name) {
      switch (capability) {
        case ExecutorCapability::kTrial:
          if (b.run_trial != nullptr) return &b;
          break;
        case ExecutorCapability::kCollectiveSweep:
          if (b.sweep_collectives != nullptr) return &b;
          break;
        case ExecutorCapability::kProbes:
          if (b.run_probes != nullptr) return &b;
          return absl::InvalidArgumentError(
              absl::StrCat("'", name, "' probes are not part of this build"));
      }
      return absl::InvalidArgumentError(
          absl::StrCat("'", name, "' is not part of this build"));
    }
    names.push_back(b.name);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "'", name, "' is not ", absl::StrJoin(names, " or ")));
}

}  // namespace tessera::executor
