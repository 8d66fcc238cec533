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
  SyntheticTokens data(kEngineDataSeed, model.vocab);
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
          if (step == 0) {
            TESSERA_RETURN_IF_ERROR(engine->ReduceGradients());
            ExportHeld(*engine, backend, Held::kReducedGradients,
                       &run.step0_gradients, &mu);
          }
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

const std::vector<LayoutCase>& EquivalenceLayouts() {
  static const auto* cases = new std::vector<LayoutCase>{
      // Micro-batching and recomputation on one rank.
      LayoutCase{"micro_batch=2", 1},
      LayoutCase{"micro_batch=1,recompute=full", 1},
      LayoutCase{"micro_batch=4,recompute=selective", 1},
      // Data parallelism, every ZeRO stage, HSDP.
      LayoutCase{"zero=0,micro_batch=2", 2},
      LayoutCase{"zero=1,micro_batch=2", 2},
      LayoutCase{"zero=2,micro_batch=1", 2},
      LayoutCase{"zero=3,micro_batch=1", 4},
      LayoutCase{"zero=3,shard_group=2,micro_batch=1", 4},
      LayoutCase{"zero=1,shard_group=2,micro_batch=2", 4},
      LayoutCase{"zero=2,shard_group=4,micro_batch=1", 8},
      // Tensor parallelism, with and without sequence parallelism.
      LayoutCase{"tp=2,micro_batch=4", 2}, LayoutCase{"tp=4,micro_batch=8", 4},
      LayoutCase{"tp=2,sp=1,micro_batch=2", 2},
      LayoutCase{"tp=4,sp=1,micro_batch=4", 4},
      // Pipelines: 1F1B, uneven stages, interleaved.
      LayoutCase{"pp=2,micro_batch=1", 2}, LayoutCase{"pp=4,micro_batch=2", 4},
      LayoutCase{"pp=3,micro_batch=1", 3},
      LayoutCase{"pp=2,vpp=2,micro_batch=1", 2},
      LayoutCase{"pp=2,vpp=2,micro_batch=2", 2},
      // Context parallelism (ring attention).
      LayoutCase{"cp=2,micro_batch=2", 2}, LayoutCase{"cp=4,micro_batch=1", 4},
      // Combinations on up to 8 ranks.
      LayoutCase{"tp=2,pp=2,zero=3,micro_batch=1", 8},
      LayoutCase{"tp=2,sp=1,cp=2,zero=1,micro_batch=2", 8},
      LayoutCase{"tp=2,pp=2,vpp=2,zero=2,micro_batch=1", 8},
      LayoutCase{"pp=2,cp=2,zero=3,recompute=full,micro_batch=1", 8},
      LayoutCase{"tp=2,sp=1,pp=2,cp=2,recompute=selective,micro_batch=2", 8},
      LayoutCase{"cp=2,zero=3,shard_group=2,micro_batch=1", 8},
      LayoutCase{"tp=2,pp=2,dp=2,zero=1,recompute=full,micro_batch=2", 8}};
  return *cases;
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
                        const std::string& what, double tolerance,
                        double loss_tolerance) {
  if (loss_tolerance < 0) loss_tolerance = tolerance;
  ASSERT_EQ(run.losses.size(), ref.losses.size()) << what;
  for (size_t i = 0; i < ref.losses.size(); ++i) {
    EXPECT_NEAR(run.losses[i] / ref.losses[i], 1.0, loss_tolerance)
        << what << " step " << i << ": " << run.losses[i] << " vs "
        << ref.losses[i];
  }
  ExpectSameTensors(run.weights, ref.weights, what + " weights", tolerance);
}

void ExpectSameStep0Gradients(const EngineRun& run, const EngineRun& ref,
                              const std::string& what) {
  ASSERT_FALSE(ref.step0_gradients.empty()) << what << ": no reference";
  ExpectSameTensors(run.step0_gradients, ref.step0_gradients,
                    what + " step-0 gradients", kStep0GradientTolerance);
}

void ExpectSameTensors(const GlobalTensors& got, const GlobalTensors& want,
                       const std::string& what, double tolerance) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (const auto& [name, w] : want) {
    auto it = got.find(name);
    ASSERT_NE(it, got.end()) << what << " lacks " << name;
    const GlobalTensor& g = it->second;
    ASSERT_EQ(g.values.size(), w.values.size()) << what << " " << name;
    for (int writers : g.writers) ASSERT_GT(writers, 0) << what << " " << name;
    EXPECT_EQ(g.conflicts, 0)
        << what << ": replicas of " << name << " disagree";
    EXPECT_LE(RelativeNormError(g.values, w.values), tolerance)
        << what << " " << name;
  }
}

}  // namespace tessera::executor::testing
