#include "tests/executor/engine/engine_test_util.h"

#include <cmath>

#include "core/status_macros.h"
#include "executor/comm/run_ranks.h"
#include "executor/cpu/cpu_backend.h"
#include "executor/engine/token_data.h"
#include "gtest/gtest.h"

namespace tessera::executor::testing {

absl::StatusOr<EngineRun> RunEngine(const std::string& layout_text, int ranks,
                                    const RunOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(ModelConfig model, ModelPreset(options.model));
  TESSERA_ASSIGN_OR_RETURN(Layout parsed, ParseLayout(layout_text));
  TESSERA_ASSIGN_OR_RETURN(Layout layout,
                           ResolveLayout(parsed, ranks, options.global_batch));
  SyntheticTokens data(/*seed=*/7, model.vocab);
  EngineConfig config{model,           layout,
                      options.seq_len, options.global_batch,
                      /*seed=*/1234,   AdamWConfig{.lr = options.lr},
                      &data,           options.max_grad_norm};
  EngineRun run;
  run.losses.assign(options.steps, 0.0);
  run.grad_norms.assign(options.steps, 0.0);
  run.peak_bytes.assign(ranks, 0);
  absl::Mutex mu;
  const std::vector<absl::Status> statuses =
      RunRanks(ranks, [&](int rank, Communicator& world) -> absl::Status {
        CpuBackend backend({.memory_limit_bytes = options.memory_limit_bytes,
                            .blas_threads = 1});
        TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<RankEngine> engine,
                                 RankEngine::Create(config, backend, world));
        for (int step = 0; step < options.steps; ++step) {
          TESSERA_ASSIGN_OR_RETURN(double loss, engine->ForwardBackward());
          if (rank == 0) run.losses[step] = loss;
          if (options.keep_gradients && step + 1 == options.steps) {
            ExportHeld(*engine, backend, Held::kGradients, &run.gradients, &mu);
          }
          TESSERA_RETURN_IF_ERROR(engine->ApplyOptimizer());
          if (rank == 0) run.grad_norms[step] = engine->last_grad_norm();
        }
        ExportHeld(*engine, backend, Held::kWeights, &run.weights, &mu);
        run.peak_bytes[rank] = backend.peak_bytes();
        return absl::OkStatus();
      });
  TESSERA_RETURN_IF_ERROR(FirstFailure(statuses));
  return run;
}

std::string LayoutCaseName(const ::testing::TestParamInfo<LayoutCase>& info) {
  std::string name = info.param.layout;
  for (char& ch : name) {
    if (ch == '=' || ch == ',') ch = '_';
  }
  return name + "_r" + std::to_string(info.param.ranks);
}

double RelativeNormError(const std::vector<float>& a,
                         const std::vector<float>& ref) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff += (static_cast<double>(a[i]) - ref[i]) *
            (static_cast<double>(a[i]) - ref[i]);
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(diff / norm);
}

void ExpectSameTraining(const EngineRun& run, const EngineRun& ref,
                        const std::string& what, double tolerance) {
  ASSERT_EQ(run.losses.size(), ref.losses.size()) << what;
  for (size_t i = 0; i < ref.losses.size(); ++i) {
    EXPECT_NEAR(run.losses[i] / ref.losses[i], 1.0, tolerance)
        << what << " step " << i << ": " << run.losses[i] << " vs "
        << ref.losses[i];
  }
  ASSERT_EQ(run.weights.size(), ref.weights.size()) << what;
  for (const auto& [name, want] : ref.weights) {
    auto it = run.weights.find(name);
    ASSERT_NE(it, run.weights.end()) << what << " lacks " << name;
    const GlobalTensor& got = it->second;
    for (int w : got.writers) ASSERT_GT(w, 0) << what << " " << name;
    EXPECT_EQ(got.conflicts, 0)
        << what << ": replicas of " << name << " disagree";
    EXPECT_LE(RelativeNormError(got.values, want.values), tolerance)
        << what << " " << name;
  }
}

}  // namespace tessera::executor::testing
