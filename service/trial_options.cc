#include "service/trial_options.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/command_template.h"
#include "core/status_macros.h"
#include "core/trial_backend.h"

namespace tessera::service {
namespace {

absl::Status FieldError(absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat("study.trials.", field, ": ", message));
}

absl::Status CheckRange(absl::string_view field, int64_t value, int64_t min,
                        int64_t max) {
  if (value < min || value > max) {
    return FieldError(field, absl::StrCat("must be an integer in [", min, ", ",
                                          max, "], got ", value));
  }
  return absl::OkStatus();
}

absl::Status CheckFinite(absl::string_view field, double value,
                         bool allow_zero) {
  if (!std::isfinite(value) || value < 0 || (value == 0 && !allow_zero)) {
    return FieldError(field,
                      absl::StrCat("must be a finite ",
                                   allow_zero ? "non-negative" : "positive",
                                   " number, got ", value));
  }
  return absl::OkStatus();
}

}  // namespace

int64_t TrialOptions::StepsAtRung(int64_t rung) const {
  int64_t s = steps;
  for (int64_t r = 0; r < rung; ++r) {
    if (s > kMaxTrialSteps / eta) return kMaxTrialSteps;
    s *= eta;
  }
  return s;
}

absl::StatusOr<TrialOptions> ResolveTrialOptions(const v1::TrialOptions& p,
                                                 const ModelConfig& model) {
  TrialOptions o;
  if (p.has_max_trials()) {
    TESSERA_RETURN_IF_ERROR(CheckRange("max_trials", p.max_trials(), 0, 10000));
    o.max_trials = p.max_trials();
  }
  TESSERA_RETURN_IF_ERROR(CheckFinite("time_budget_s", p.time_budget_s(),
                                      /*allow_zero=*/true));
  o.time_budget_s = p.time_budget_s();
  o.first_rung = std::min<int64_t>(o.max_trials, 4);
  if (p.has_first_rung()) {
    TESSERA_RETURN_IF_ERROR(CheckRange("first_rung", p.first_rung(), 1,
                                       std::max<int64_t>(o.max_trials, 1)));
    if (o.max_trials == 0) {
      return FieldError("first_rung", "max_trials is 0: no trials run");
    }
    o.first_rung = p.first_rung();
  }
  if (p.has_eta()) {
    TESSERA_RETURN_IF_ERROR(CheckRange("eta", p.eta(), 2, 100));
    o.eta = p.eta();
  }
  if (p.has_warmup_steps()) {
    TESSERA_RETURN_IF_ERROR(
        CheckRange("warmup_steps", p.warmup_steps(), 0, 10000));
    o.warmup_steps = p.warmup_steps();
  }
  if (p.has_steps()) {
    TESSERA_RETURN_IF_ERROR(CheckRange("steps", p.steps(), 1, 100000));
    o.steps = p.steps();
  }
  if (!p.backend().empty() && !FindTrialBackend(p.backend()).ok()) {
    return FieldError("backend",
                      absl::StrCat("'", p.backend(), "' is not ",
                                   TrialBackendNames(), " or \"\" (any)"));
  }
  o.backend = p.backend();
  const bool runs_command =
      !p.backend().empty() &&
      (*FindTrialBackend(p.backend()))->launcher == TrialLauncher::kCommand;
  if (runs_command && p.command().empty()) {
    return FieldError("command",
                      absl::StrCat("required by backend '", p.backend(),
                                   "': the training command each agent runs"));
  }
  if (!runs_command && !p.command().empty()) {
    return FieldError(
        "command",
        absl::StrCat("only backend \"command\" runs a command; backend is ",
                     p.backend().empty()
                         ? "\"\" (cpu or cuda)"
                         : absl::StrCat("'", p.backend(), "'")));
  }
  if (runs_command) {
    if (absl::Status s = CheckCommandTemplate(p.command()); !s.ok()) {
      return FieldError("command", s.message());
    }
  }
  o.command = p.command();
  TESSERA_RETURN_IF_ERROR(CheckRange("layers", p.layers(), 0, model.layers));
  o.layers = p.layers();
  if (p.has_trial_time_limit_s()) {
    TESSERA_RETURN_IF_ERROR(CheckFinite(
        "trial_time_limit_s", p.trial_time_limit_s(), /*allow_zero=*/false));
    o.trial_time_limit_s = p.trial_time_limit_s();
  }
  if (p.memory_limit_bytes() < 0) {
    return FieldError("memory_limit_bytes",
                      absl::StrCat("must be 0 (none) or positive, got ",
                                   p.memory_limit_bytes()));
  }
  o.memory_limit_bytes = p.memory_limit_bytes();
  if (p.has_seed()) o.seed = p.seed();
  if (p.has_stop_margin()) {
    TESSERA_RETURN_IF_ERROR(
        CheckFinite("stop_margin", p.stop_margin(), /*allow_zero=*/true));
    o.stop_margin = p.stop_margin();
  }
  return o;
}

}  // namespace tessera::service
