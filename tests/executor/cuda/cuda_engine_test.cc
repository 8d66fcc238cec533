// The whole training step on the CUDA backend (skipped without a GPU):
//   1. the tiny Llama on one GPU against the CPU engine (fp32) from the same
//      initial weights and tokens: losses and weights after 3 AdamW steps;
//   2. every layout of the CPU equivalence test on 2-8 ranks as threads on
//      one GPU (in-process communicator over device memory) against the
//      single-rank GPU run, with replicas of a weight bitwise equal.
// Tolerances. The GPU computes activations and compute weights in bf16
// (8 significant bits), the CPU in f32, so logits and gradients differ by
// ~0.5% relative; the mean loss over 256 tokens then agrees to ~1e-3
// (reasoned, not yet measured: the H100 run of 2026-11-26 passed at 1e-2
// without printing the error), and 5e-3 relative is asked, so that a 1%
// change in a loss fails (the whole 3-step change is under 1%: 1e-2 could
// not tell a wrong step from a right one).
// AdamW's first steps move each weight by about lr * sign(g): elements with
// small gradients may move the other way, so weights (which moved by ~3 lr =
// 1e-3 against init scales of 2e-2 and 1) agree to 1e-2 relative per tensor,
// and the update directions (w3 - w0) to a cosine of at least 0.9. Layouts on
// the GPU sum in other orders and round at other points (a tp all-reduce of
// bf16 partials instead of one GEMM output), so they get the same tolerances
// against the single-rank GPU run.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "executor/comm/run_ranks.h"
#include "executor/cuda/cuda_backend.h"
#include "executor/cuda/device_memory_ops.h"
#include "executor/cuda/device_sync_communicator.h"
#include "executor/engine/param_export.h"
#include "executor/engine/rank_engine.h"
#include "executor/engine/token_data.h"
#include "gtest/gtest.h"
#include "tests/executor/cuda/cuda_test_util.h"
#include "tests/executor/engine/engine_test_util.h"

namespace tessera::executor::testing {
namespace {

// RunEngine (engine_test_util.h) with CUDA backends: every rank a thread on
// GPU 0, the in-process world over device memory.
absl::StatusOr<EngineRun> RunGpuEngine(const std::string& layout_text,
                                       int ranks,
                                       const RunOptions& options = {}) {
  TESSERA_ASSIGN_OR_RETURN(ModelConfig model, ModelPreset(options.model));
  TESSERA_ASSIGN_OR_RETURN(Layout parsed, ParseLayout(layout_text));
  TESSERA_ASSIGN_OR_RETURN(Layout layout,
                           ResolveLayout(parsed, ranks, options.global_batch));
  SyntheticTokens data(/*seed=*/7, model.vocab);  // as RunEngine's
  EngineConfig config{model,
                      layout,
                      options.seq_len,
                      options.global_batch,
                      /*seed=*/1234,
                      AdamWConfig{.lr = options.lr},
                      &data};
  InProcessOptions io;
  TESSERA_ASSIGN_OR_RETURN(io.memory_ops, DeviceMemoryOps::Create(0));
  EngineRun run;
  run.losses.assign(options.steps, 0.0);
  run.peak_bytes.assign(ranks, 0);
  absl::Mutex mu;
  const std::vector<absl::Status> statuses = RunRanks(
      ranks,
      [&](int rank, Communicator& world) -> absl::Status {
        TESSERA_ASSIGN_OR_RETURN(
            std::unique_ptr<CudaBackend> backend,
            CudaBackend::Create(
                {.device = 0,
                 .memory_limit_bytes = options.memory_limit_bytes}));
        DeviceSyncCommunicator synced(&world, backend.get());
        TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<RankEngine> engine,
                                 RankEngine::Create(config, *backend, synced));
        for (int step = 0; step < options.steps; ++step) {
          TESSERA_ASSIGN_OR_RETURN(double loss, engine->ForwardBackward());
          if (rank == 0) run.losses[step] = loss;
          TESSERA_RETURN_IF_ERROR(engine->ApplyOptimizer());
        }
        ExportHeld(*engine, *backend, Held::kWeights, &run.weights, &mu);
        run.peak_bytes[rank] = backend->peak_bytes();
        return absl::OkStatus();
      },
      io);
  TESSERA_RETURN_IF_ERROR(FirstFailure(statuses));
  return run;
}

// cos(a - base, b - base) over every weight.
double UpdateCosine(const GlobalTensors& a, const GlobalTensors& b,
                    const GlobalTensors& base) {
  double dot = 0, na = 0, nb = 0;
  for (const auto& [name, w0] : base) {
    const std::vector<float>& x = a.at(name).values;
    const std::vector<float>& y = b.at(name).values;
    for (size_t i = 0; i < w0.values.size(); ++i) {
      const double dx = double(x[i]) - w0.values[i];
      const double dy = double(y[i]) - w0.values[i];
      dot += dx * dy;
      na += dx * dx;
      nb += dy * dy;
    }
  }
  return dot / std::sqrt(na * nb);
}

// The loss tolerance of bf16 runs against f32 or each other (see the top).
constexpr double kBf16LossTolerance = 5e-3;

const EngineRun& GpuReference() {
  static const EngineRun* run = [] {
    absl::StatusOr<EngineRun> r = RunGpuEngine("micro_batch=8", 1);
    EXPECT_TRUE(r.ok()) << r.status();
    return new EngineRun(r.ok() ? *r : EngineRun{});
  }();
  return *run;
}

TEST(CudaEngineTest, OneGpuTrainsLikeTheCpuEngine) {
  TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
  absl::StatusOr<EngineRun> cpu = RunEngine("micro_batch=8", 1);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  absl::StatusOr<EngineRun> initial =
      RunEngine("micro_batch=8", 1, RunOptions{.steps = 0});
  ASSERT_TRUE(initial.ok()) << initial.status();
  const EngineRun& gpu = GpuReference();
  ASSERT_EQ(gpu.losses.size(), 3u);
  EXPECT_NEAR(gpu.losses[0], std::log(512.0), 0.3);
  EXPECT_LT(gpu.losses[2], gpu.losses[0]);
  ExpectSameTraining(gpu, *cpu, "gpu vs cpu", 1e-2, kBf16LossTolerance);
  const double cosine = UpdateCosine(gpu.weights, cpu->weights, initial->weights);
  EXPECT_GE(cosine, 0.9);
  EXPECT_GT(gpu.peak_bytes[0], 0);
  // What the reasoned tolerances are against (bench/cuda/RESULTS.md).
  for (size_t i = 0; i < gpu.losses.size() && i < cpu->losses.size(); ++i) {
    std::printf("measured: step %zu loss gpu %.6f cpu %.6f, relative %.2e\n", i,
                gpu.losses[i], cpu->losses[i],
                std::abs(gpu.losses[i] - cpu->losses[i]) / cpu->losses[i]);
  }
  double worst = 0;
  std::string worst_name;
  for (const auto& [name, w] : cpu->weights) {
    if (!gpu.weights.count(name)) continue;
    const double e =
        cuda_test::RelativeError(gpu.weights.at(name).values, w.values);
    if (e >= worst) {
      worst = e;
      worst_name = name;
    }
  }
  std::printf(
      "measured: weights after %zu steps: largest relative error %.2e (%s), "
      "update cosine %.4f\n",
      gpu.losses.size(), worst, worst_name.c_str(), cosine);
}

using Case = LayoutCase;

class CudaLayoutTest : public ::testing::TestWithParam<Case> {};

TEST_P(CudaLayoutTest, ThreadRanksOnOneGpuMatchOneRank) {
  TESSERA_SKIP_WITHOUT_CUDA_DEVICE();
  const Case& c = GetParam();
  absl::StatusOr<EngineRun> run = RunGpuEngine(c.layout, c.ranks);
  ASSERT_TRUE(run.ok()) << c.layout << ": " << run.status();
  ExpectSameTraining(*run, GpuReference(), c.layout, 1e-2, kBf16LossTolerance);
}

// The CPU engine's list.
INSTANTIATE_TEST_SUITE_P(Layouts, CudaLayoutTest,
                         ::testing::ValuesIn(EquivalenceLayouts()),
                         LayoutCaseName);

}  // namespace
}  // namespace tessera::executor::testing
