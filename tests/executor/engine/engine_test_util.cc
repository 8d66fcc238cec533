#include "tests/executor/engine/engine_test_util.h"

#include "core/status_macros.h"
#include "executor/comm/run_ranks.h"
#include "executor/cpu/cpu_backend.h"
#include "executor/engine/token_data.h"

namespace tessera::executor::testing {

absl::StatusOr<EngineRun> RunEngine(const std::string& layout_text, int ranks,
                                    const RunOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(ModelConfig model, ModelPreset(options.model));
  TESSERA_ASSIGN_OR_RETURN(Layout parsed, ParseLayout(layout_text));
  TESSERA_ASSIGN_OR_RETURN(Layout layout,
                           ResolveLayout(parsed, ranks, options.global_batch));
  SyntheticTokens data(/*seed=*/7, model.vocab);
  EngineConfig config{model,
                      layout,
                      options.seq_len,
                      options.global_batch,
                      /*seed=*/1234,
                      AdamWConfig{.lr = options.lr},
                      &data};
  EngineRun run;
  run.losses.assign(options.steps, 0.0);
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
        }
        ExportHeld(*engine, backend, Held::kWeights, &run.weights, &mu);
        run.peak_bytes[rank] = backend.peak_bytes();
        return absl::OkStatus();
      });
  TESSERA_RETURN_IF_ERROR(FirstFailure(statuses));
  return run;
}

}  // namespace tessera::executor::testing
