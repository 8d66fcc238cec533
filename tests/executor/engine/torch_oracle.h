// PyTorch as the independent implementation the engine tests compare with
// (Debian's python3-torch, float64): whether it can run here, the model part
// of the manifests its scripts read, and one forward and backward through
// torch_reference.py.
//
//   if (!TorchAvailable()) GTEST_SKIP() << kTorchMissing;
//   absl::StatusOr<TorchGradients> want =
//       RunTorchReference(model, weights, data, /*global_batch=*/8, 32);
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model.h"
#include "executor/engine/param_export.h"
#include "executor/engine/token_data.h"
#include "nlohmann/json.hpp"

namespace tessera::executor::testing {

// Debian's interpreter: the first python3 on PATH may lack torch.
inline constexpr char kTorchPython[] = "/usr/bin/python3";
inline constexpr char kTorchMissing[] =
    "/usr/bin/python3 cannot import torch and numpy "
    "(deploy/install-deps.sh --tests installs python3-torch)";

// Whether kTorchPython imports torch and numpy (checked once per process).
bool TorchAvailable();

// The manifest's "model" object: the shape torch_reference.py and
// torch_training_oracle.py rebuild.
nlohmann::json ModelManifest(const ModelConfig& model);

struct TorchGradients {
  double loss = 0;  // mean cross-entropy over the batch
  std::map<std::string, std::vector<float>> grads;  // by weight name
};

// Loss and every weight's gradient of one forward and backward over global
// samples 0 .. global_batch-1 of `data` (seq_len tokens each), from
// `weights`, computed by tests/executor/engine/torch_reference.py in float64.
absl::StatusOr<TorchGradients> RunTorchReference(const ModelConfig& model,
                                                 const GlobalTensors& weights,
                                                 const TokenSource& data,
                                                 int64_t global_batch,
                                                 int64_t seq_len);

}  // namespace tessera::executor::testing
