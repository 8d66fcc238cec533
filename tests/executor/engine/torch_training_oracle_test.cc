// A multi-step oracle for the CPU executor's training: the engine trains the
// tiny Llama on one rank for kSteps AdamW steps with gradient clipping; PyTorch
// (Debian's python3-torch, float64; torch_training_oracle.py) trains the same
// model from the same initial weights on the same tokens with
// torch.optim.AdamW and clip_grad_norm_, and the two are compared step by
// step: the loss and the gradient norm (before clipping) of every step, and
// every parameter after the last step.
//
// Parameter groups (the engine's convention, executor/engine/model_shard.cc):
// weight decay on every matrix (embedding, attention and MLP projections,
// output), none on the RMSNorm weights.
//
// Files are exchanged as raw float64 (little-endian, row-major) with a
// manifest.json; the test skips when /usr/bin/python3 cannot import torch.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "executor/comm/run_ranks.h"
#include "executor/cpu/cpu_backend.h"
#include "executor/engine/param_export.h"
#include "executor/engine/rank_engine.h"
#include "executor/engine/token_data.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/executor/engine/torch_oracle.h"

namespace tessera::executor {
namespace {

namespace fs = std::filesystem;


constexpr int kSteps = 24;
constexpr int64_t kGlobalBatch = 4;
constexpr int64_t kSeqLen = 32;
// The model trains on one fixed batch (RepeatedBatch), so the loss falls
// smoothly, from 6.26 to about 1.7 over the 24 steps: a trajectory float32
// can follow (on fresh batches the tiny model's loss barely moves and the
// gradient norms jump, which amplifies rounding).
constexpr float kLr = 1e-3f;
constexpr float kWeightDecay = 0.1f;
// Below every step's gradient norm (about 1 to 6), so every step clips, with
// a coefficient that varies from step to step.
constexpr double kMaxGradNorm = 0.5;

// Tolerances, engine (float32 weights, moments and arithmetic, OpenBLAS
// sgemm) against float64. Measured over the 24 steps, the largest relative
// errors are 2.3e-7 on the loss, 2e-5 on the gradient norm and 2.6e-5 on a
// tensor's update; float32 rounding (6e-8) accumulates through the steps and
// the gradient (a difference of nearly equal terms) has the least precision.
// The bounds allow ~10-40x that for other BLAS kernels and thread counts. A
// fault that changes the training is far larger: 1% of the loss drop (4.5
// nats) is 0.045, 2.6% of the final loss. Mutations of the engine, each
// caught: AdamW's step counter frozen at 1 (final loss 0.25, not 1.72);
// weight decay on the RMSNorm weights (loss off by up to 5e-3 relative, norm
// weights' updates by 0.1-0.5); clipping skipped (loss off by up to 5e-2).
constexpr double kLossRelTol = 1e-5;
constexpr double kGradNormRelTol = 2e-4;
// Per tensor: |w_engine - w_torch| / |w_torch - w_initial| (L2), the error
// relative to how far training moved the tensor.
constexpr double kUpdateRelTol = 3e-4;

// The first `batch` samples of `base`, repeated: sample i is base's sample
// i mod batch, so every step trains on the same sequences.
class RepeatedBatch final : public TokenSource {
 public:
  RepeatedBatch(const TokenSource& base, int64_t batch)
      : base_(base), batch_(batch) {}
  void Sample(int64_t index, int64_t length, int32_t* out) const override {
    base_.Sample(index % batch_, length, out);
  }
  std::string description() const override {
    return absl::StrCat("the first ", batch_, " samples of ",
                        base_.description(), ", repeated");
  }

 private:
  const TokenSource& base_;
  int64_t batch_;
};

void WriteF64(const fs::path& path, const std::vector<double>& values) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(values.data()),
             static_cast<std::streamsize>(values.size() * sizeof(double)));
}

std::vector<double> ReadF64(const fs::path& path, size_t count) {
  std::vector<double> values(count);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(values.data()),
          static_cast<std::streamsize>(count * sizeof(double)));
  if (!in || in.peek() != std::char_traits<char>::eof()) values.clear();
  return values;
}

std::vector<double> ToF64(const std::vector<float>& values) {
  return std::vector<double>(values.begin(), values.end());
}

TEST(TorchTrainingOracleTest, AdamWWithClippingMatchesPyTorchStepByStep) {
  if (!testing::TorchAvailable()) GTEST_SKIP() << testing::kTorchMissing;
  const ModelConfig model = *ModelPreset("tiny");
  absl::StatusOr<Layout> layout =
      ResolveLayout(*ParseLayout("micro_batch=4"), 1, kGlobalBatch);
  ASSERT_TRUE(layout.ok()) << layout.status();
  const SyntheticTokens synthetic(/*seed=*/5, model.vocab);
  const RepeatedBatch data(synthetic, kGlobalBatch);
  const AdamWConfig adamw{.lr = kLr, .weight_decay = kWeightDecay};
  EngineConfig config{model,       *layout, kSeqLen, kGlobalBatch,
                      /*seed=*/77, adamw,   &data,   kMaxGradNorm};

  GlobalTensors initial, final_weights;
  std::vector<double> losses(kSteps), grad_norms(kSteps);
  absl::Mutex mu;
  const std::vector<absl::Status> statuses =
      RunRanks(1, [&](int, Communicator& world) -> absl::Status {
        CpuBackend backend;
        TESSERA_ASSIGN_OR_RETURN(auto engine,
                                 RankEngine::Create(config, backend, world));
        ExportHeld(*engine, backend, Held::kWeights, &initial, &mu);
        for (int step = 0; step < kSteps; ++step) {
          TESSERA_ASSIGN_OR_RETURN(StepResult r, engine->Step());
          losses[step] = r.loss;
          grad_norms[step] = r.grad_norm;
        }
        ExportHeld(*engine, backend, Held::kWeights, &final_weights, &mu);
        return absl::OkStatus();
      });
  ASSERT_TRUE(FirstFailure(statuses).ok()) << FirstFailure(statuses);

  const fs::path dir =
      fs::path(::testing::TempDir()) / absl::StrCat("torch_oracle_", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  nlohmann::json manifest;
  manifest["model"] = testing::ModelManifest(model);
  // The float32 values the engine uses, widened exactly.
  manifest["adamw"] = {
      {"lr", static_cast<double>(adamw.lr)},
      {"beta1", static_cast<double>(adamw.beta1)},
      {"beta2", static_cast<double>(adamw.beta2)},
      {"eps", static_cast<double>(adamw.eps)},
      {"weight_decay", static_cast<double>(adamw.weight_decay)}};
  manifest["max_grad_norm"] = kMaxGradNorm;
  manifest["steps"] = kSteps;
  for (const auto& [name, t] : initial) {
    ASSERT_EQ(t.conflicts, 0) << name;
    const std::string file = name + ".f64";
    WriteF64(dir / file, ToF64(t.values));
    manifest["params"].push_back(
        {{"name", name}, {"rows", t.rows}, {"cols", t.cols}, {"file", file}});
  }
  // Step s trains on global samples s * batch .. s * batch + batch - 1.
  std::vector<int32_t> seq(kSeqLen + 1);
  for (int step = 0; step < kSteps; ++step) {
    nlohmann::json tokens, targets;
    for (int64_t i = 0; i < kGlobalBatch; ++i) {
      data.Sample(step * kGlobalBatch + i, kSeqLen + 1, seq.data());
      tokens.push_back(std::vector<int32_t>(seq.begin(), seq.end() - 1));
      targets.push_back(std::vector<int32_t>(seq.begin() + 1, seq.end()));
    }
    manifest["tokens"].push_back(tokens);
    manifest["targets"].push_back(targets);
  }
  std::ofstream(dir / "manifest.json") << manifest.dump();
  const std::string script = absl::StrCat(
      TESSERA_SOURCE_DIR, "/tests/executor/engine/torch_training_oracle.py");
  ASSERT_EQ(std::system(
                absl::StrCat(testing::kTorchPython, " ", script, " ", dir.string()).c_str()),
            0)
      << script << " failed";

  const std::vector<double> want_losses =
      ReadF64(dir / "out" / "losses.f64", kSteps);
  const std::vector<double> want_norms =
      ReadF64(dir / "out" / "grad_norms.f64", kSteps);
  ASSERT_EQ(want_losses.size(), static_cast<size_t>(kSteps));
  ASSERT_EQ(want_norms.size(), static_cast<size_t>(kSteps));
  // The run must exercise what the test is about: the loss falls far more
  // than the tolerance, and clipping acts on most steps.
  const double drop = want_losses.front() - want_losses.back();
  EXPECT_GT(drop, 100 * kLossRelTol * want_losses.front())
      << "the loss barely moves; the oracle would not see a wrong optimizer";
  int clipped = 0;
  for (double n : want_norms) clipped += n > kMaxGradNorm;
  EXPECT_GE(clipped, kSteps / 2) << "clipping acts on too few steps";

  double worst_loss = 0, worst_norm = 0, worst_update = 0;
  for (int s = 0; s < kSteps; ++s) {
    worst_loss = std::max(worst_loss, std::abs(losses[s] / want_losses[s] - 1));
    worst_norm =
        std::max(worst_norm, std::abs(grad_norms[s] / want_norms[s] - 1));
    EXPECT_NEAR(losses[s] / want_losses[s], 1.0, kLossRelTol)
        << "step " << s << " loss: engine " << losses[s] << ", torch "
        << want_losses[s];
    EXPECT_NEAR(grad_norms[s] / want_norms[s], 1.0, kGradNormRelTol)
        << "step " << s << " gradient norm: engine " << grad_norms[s]
        << ", torch " << want_norms[s];
  }
  for (const auto& [name, w] : final_weights) {
    const std::vector<double> want =
        ReadF64(dir / "out" / (name + ".f64"), w.values.size());
    ASSERT_EQ(want.size(), w.values.size()) << name << " missing or mis-sized";
    const std::vector<float>& w0 = initial.at(name).values;
    double diff = 0, moved = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      diff += std::pow(static_cast<double>(w.values[i]) - want[i], 2);
      moved += std::pow(want[i] - static_cast<double>(w0[i]), 2);
    }
    ASSERT_GT(moved, 0) << name << " did not move in the reference";
    const double error = std::sqrt(diff / moved);
    EXPECT_LE(error, kUpdateRelTol) << name;
    worst_update = std::max(worst_update, error);
  }
  std::printf(
      "torch: loss %.4f -> %.4f over %d steps, %d of them clipped; largest "
      "relative error: loss %.2g, gradient norm %.2g, update %.2g\n",
      want_losses.front(), want_losses.back(), kSteps, clipped, worst_loss,
      worst_norm, worst_update);
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace tessera::executor
