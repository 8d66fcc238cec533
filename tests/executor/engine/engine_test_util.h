// Runs the engine on the in-process world with CPU backends, for tests.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "executor/engine/param_export.h"
#include "executor/engine/rank_engine.h"

namespace tessera::executor::testing {

struct EngineRun {
  std::vector<double> losses;       // per step
  GlobalTensors weights;            // after the last step
  GlobalTensors gradients;          // of the last step, before the update
                                    // (meaningful for single-rank runs only)
  std::vector<int64_t> peak_bytes;  // per rank
};

struct RunOptions {
  std::string model = "tiny";
  int64_t seq_len = 32;
  int64_t global_batch = 8;
  int steps = 3;
  int64_t memory_limit_bytes = 0;
  bool keep_gradients = false;
  float lr = AdamWConfig{}.lr;  // 3e-4, a typical LLM peak rate
};

// Runs `steps` optimizer steps of `layout_text` on `ranks` ranks.
absl::StatusOr<EngineRun> RunEngine(const std::string& layout_text, int ranks,
                                    const RunOptions& options = {});

}  // namespace tessera::executor::testing
