// The start that every trial shares, whatever its backend (the CPU trial in
// trial_runner.cc, the CUDA trial in executor/cuda/cuda_trial.cc): the
// result's identifying fields, the resolved layout, the token source and the
// engine config over them, and the deadline. Failures here make the trial
// `invalid` (docs/architecture.md "A trial").
//
//   TrialResult r = NewTrialResult(config);
//   if (absl::Status s = ValidateTrialConfig(config); !s.ok()) {
//     return FailedResult(r, TrialStatus::kInvalid, s.message());
//   }
//   absl::StatusOr<TrialSetup> setup = SetUpTrial(config, r);
//   if (!setup.ok()) {
//     return FailedResult(r, TrialStatus::kInvalid, setup.status().message());
//   }
//   ... RankEngine::Create(setup->engine, backend, world) ...
//   if (Clock::now() > TrialDeadline(config)) ...
#pragma once

#include <chrono>
#include <memory>

#include "absl/status/statusor.h"
#include "core/trial_result.h"
#include "executor/engine/rank_engine.h"
#include "executor/engine/token_data.h"
#include "executor/trial/trial_config.h"

namespace tessera::executor {

// A result that names the trial (layout as given, backend, model, ranks,
// batch, sequence length, warm-up) and nothing measured yet.
TrialResult NewTrialResult(const TrialConfig& config);

// What the ranks of a trial run.
struct TrialSetup {
  std::unique_ptr<TokenSource> data;  // synthetic, or the config's data file
  EngineConfig engine;                // resolved layout; engine.data = data
};

// Resolves the layout for the ranks and batch (recorded in result.layout as
// soon as it resolves, so that a trial failing later still reports it), opens
// the tokens (synthetic when config.data_path is empty) and checks the engine
// config for the ranks. The error of the step that failed, unchanged.
absl::StatusOr<TrialSetup> SetUpTrial(const TrialConfig& config,
                                      TrialResult& result);

// When the trial's time limit passes, counted from now; the far future when
// it has none.
std::chrono::steady_clock::time_point TrialDeadline(const TrialConfig& config);

}  // namespace tessera::executor
