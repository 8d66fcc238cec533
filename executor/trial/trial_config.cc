#include "executor/trial/trial_config.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/model.h"

namespace tessera::executor {

absl::Status ValidateTrialConfig(const TrialConfig& c) {
  const std::pair<const char*, int64_t> positive[] = {
      {"ranks", c.ranks},
      {"global_batch", c.global_batch},
      {"seq_len", c.seq_len},
      {"steps", c.steps}};
  for (const auto& [field, value] : positive) {
    if (value <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("trial.", field, ": must be positive, got ", value));
    }
  }
  if (c.warmup_steps < 0 || c.memory_limit_bytes < 0 || c.time_limit_s < 0 ||
      c.ranks_per_host < 0) {
    return absl::InvalidArgumentError(
        "trial: warmup, memory limit, time limit and ranks per host must not "
        "be negative");
  }
  if (c.process_rank >= c.ranks) {
    return absl::InvalidArgumentError(
        absl::StrCat("trial.rank: ", c.process_rank, " is not below the ",
                     c.ranks, " ranks"));
  }
  if (c.process_rank >= 0 && c.rendezvous_file.empty()) {
    return absl::InvalidArgumentError(
        "trial.rendezvous_file: required with one process per rank");
  }
  return ValidateModel(c.model);
}

}  // namespace tessera::executor
