// A study's trial options (specs.proto TrialOptions) with every default
// applied and every value checked: the budget, the successive-halving
// schedule and what each trial runs.
//
//   TESSERA_ASSIGN_OR_RETURN(TrialOptions options,
//                            ResolveTrialOptions(spec.trials(), model));
//   int64_t steps = options.StepsAtRung(2);  // steps * eta^2
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/model.h"
#include "tessera/v1/specs.pb.h"

namespace tessera::service {

struct TrialOptions {
  int64_t max_trials = 8;    // 0: no trials (predicted recommendation only)
  double time_budget_s = 0;  // 0: no limit
  int64_t first_rung = 4;    // min(max_trials, 4) unless given
  int64_t eta = 2;
  int64_t warmup_steps = 2;
  int64_t steps = 3;    // measured steps at rung 0
  std::string backend;  // "cpu", "cuda", "command" or "" (cpu or cuda)
  std::string command;  // backend "command": the template (checked)
  int64_t layers = 0;   // scale-down; 0: the full model
  double trial_time_limit_s = 300;
  int64_t memory_limit_bytes = 0;  // per rank; 0: none
  uint64_t seed = 1234;
  double stop_margin = 0.1;

  // Measured steps of a trial at `rung`: steps * eta^rung (saturating at
  // kMaxTrialSteps).
  int64_t StepsAtRung(int64_t rung) const;
};

// The most measured steps a trial is asked for, however many rungs.
inline constexpr int64_t kMaxTrialSteps = 1'000'000;

// The options of `proto` with defaults applied. INVALID_ARGUMENT names the
// field as "study.trials.<field>": max_trials in [0, 10000], time_budget_s
// finite >= 0, first_rung in [1, max_trials], eta in [2, 100], warmup_steps
// in [0, 10000], steps in [1, 100000], backend "" or a core/trial_backend
// name, command (a template, core/command_template.h) given exactly when the
// backend launches a command, layers in
// [0, the model's layers], trial_time_limit_s finite > 0, memory_limit_bytes
// >= 0, stop_margin finite >= 0.
absl::StatusOr<TrialOptions> ResolveTrialOptions(const v1::TrialOptions& proto,
                                                 const ModelConfig& model);

}  // namespace tessera::service
