#include "executor/trial/trial_setup.h"

#include <utility>

#include "core/layout.h"
#include "core/status_macros.h"

namespace tessera::executor {

TrialResult NewTrialResult(const TrialConfig& c) {
  TrialResult r;
  r.layout = c.layout;
  r.backend = c.backend;
  r.model = c.model.name.empty() ? "custom" : c.model.name;
  r.ranks = c.ranks;
  r.global_batch = c.global_batch;
  r.seq_len = c.seq_len;
  r.warmup_steps = c.warmup_steps;
  return r;
}

absl::StatusOr<TrialSetup> SetUpTrial(const TrialConfig& c,
                                      TrialResult& result) {
  TESSERA_ASSIGN_OR_RETURN(const Layout layout,
                           ResolveLayout(c.layout, c.ranks, c.global_batch));
  result.layout = layout;
  TrialSetup setup;
  if (c.data_path.empty()) {
    setup.data = std::make_unique<SyntheticTokens>(c.seed, c.model.vocab);
  } else {
    TESSERA_ASSIGN_OR_RETURN(setup.data,
                             FileTokens::Open(c.data_path, c.data_token_bytes,
                                              c.model.vocab, c.seq_len + 1));
  }
  setup.engine =
      EngineConfig{c.model, layout,  c.seq_len,        c.global_batch,
                   c.seed,  c.adamw, setup.data.get(), c.max_grad_norm};
  TESSERA_RETURN_IF_ERROR(
      CheckEngineConfig(setup.engine, static_cast<int>(c.ranks)));
  return setup;
}

std::chrono::steady_clock::time_point TrialDeadline(const TrialConfig& c) {
  using Clock = std::chrono::steady_clock;
  return c.time_limit_s > 0
             ? Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(c.time_limit_s))
             : Clock::time_point::max();
}

}  // namespace tessera::executor
