// What one trial runs: a model under a layout on some ranks for some steps,
// with the limits that turn failures into typed results.
//
//   TrialConfig config;  // model, layout, ranks, batch, steps ...
//   if (absl::Status s = ValidateTrialConfig(config); !s.ok()) ...  // invalid
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/layout.h"
#include "core/model.h"
#include "executor/backend.h"

namespace tessera::executor {

struct TrialConfig {
  std::string backend = "cpu";  // "cpu" or "cuda"
  ModelConfig model;
  Layout layout;  // as given (dp, grad_accum derived)
  int64_t ranks = 1;
  int64_t global_batch = 0;  // sequences per step
  int64_t seq_len = 0;
  int64_t warmup_steps = 10;       // the trial protocol's defaults (docs/architecture.md)
  int64_t steps = 50;              // measured steps
  int64_t memory_limit_bytes = 0;  // per rank; 0 = none
  double time_limit_s = 0;         // whole trial; 0 = none
  uint64_t seed = 1234;
  std::string data_path;     // empty: synthetic tokens
  int data_token_bytes = 2;  // 2 (uint16) or 4 (uint32) ids in data_path
  AdamWConfig adamw;
  double max_grad_norm = 1.0;  // gradient clipping, as Llama trains; 0: none

  // One process per rank (multi-host trials, as agents run them): this
  // process runs global rank `process_rank` of `ranks` and meets the others
  // through `rendezvous_file` (TCP on the CPU backend). -1: every rank is a
  // thread of this process.
  int64_t process_rank = -1;
  std::string rendezvous_file;
  std::string bind_host = "127.0.0.1";  // where this rank listens
  std::string advertise_host;           // what the others dial; "" = bind_host
  // Ranks sharing this host's cores (for BLAS threads and the per-rank peak);
  // 0 = all ranks.
  int64_t ranks_per_host = 0;
};

// Checks what every backend's trial needs before anything runs: positive
// ranks, global batch, sequence length and steps; no negative warm-up,
// memory limit, time limit or ranks per host; a process rank below the ranks
// with a rendezvous file; then the model (ValidateModel). INVALID_ARGUMENT
// naming the field ("trial.steps: must be positive, got 0"). The layout is
// checked later, against the ranks and the model (trial_setup.h).
absl::Status ValidateTrialConfig(const TrialConfig& config);

}  // namespace tessera::executor
