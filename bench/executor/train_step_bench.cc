// Single-rank training steps of the CPU executor: tokens/s and achieved
// GFLOP/s (model FLOPs, core/model_flops.h) for the `tiny` and `small`
// (~125M) Llama presets, beside the BLAS's own sgemm rate measured in the
// same run on the same threads. The ratio step GFLOP/s / sgemm GFLOP/s is
// the figure: how much of the machine's GEMM rate a whole training step
// (attention, norms, optimizer, bookkeeping included) achieves.
//
//   build/bench/executor/train_step_bench --benchmark_min_time=2
#include <memory>

#include "benchmark/benchmark.h"
#include "core/model_flops.h"
#include "executor/comm/run_ranks.h"
#include "executor/cpu/cpu_backend.h"
#include "executor/engine/rank_engine.h"
#include "executor/engine/token_data.h"
#include "executor/tessera_trial/cpu_peak.h"

namespace tessera::executor {
namespace {

// args: preset index (0 tiny, 1 small), seq_len, global batch.
void BM_TrainStep(benchmark::State& state) {
  const char* preset = state.range(0) == 0 ? "tiny" : "small";
  const int64_t seq = state.range(1), batch = state.range(2);
  const ModelConfig model = *ModelPreset(preset);
  const Layout layout = *ResolveLayout(Layout{.micro_batch = batch}, 1, batch);
  SyntheticTokens data(1, model.vocab);
  const EngineConfig config{model, layout,        seq,  batch,
                            1234,  AdamWConfig{}, &data};
  // The sgemm rate of this machine, measured now, beside the steps.
  const double sgemm_tflops = MeasureCpuPeakTflops();
  absl::Status status =
      FirstFailure(RunRanks(1, [&](int, Communicator& world) -> absl::Status {
        CpuBackend backend;  // all hardware threads for BLAS
        absl::StatusOr<std::unique_ptr<RankEngine>> engine =
            RankEngine::Create(config, backend, world);
        if (!engine.ok()) return engine.status();
        if (absl::StatusOr<StepResult> warm = (*engine)->Step(); !warm.ok()) {
          return warm.status();
        }
        for (auto _ : state) {
          absl::StatusOr<StepResult> step = (*engine)->Step();
          if (!step.ok()) return step.status();
        }
        return absl::OkStatus();
      }));
  if (!status.ok()) {
    state.SkipWithError(std::string(status.message()).c_str());
    return;
  }
  const double flops = ModelFlopsPerStep(model, batch, seq);
  state.counters["tokens_per_s"] =
      benchmark::Counter(static_cast<double>(batch * seq),
                         benchmark::Counter::kIsIterationInvariantRate);
  state.counters["step_GFLOP_per_s"] = benchmark::Counter(
      flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["sgemm_GFLOP_per_s"] = sgemm_tflops * 1e3;
  state.SetLabel(preset);
}

BENCHMARK(BM_TrainStep)
    ->Args({0, 128, 8})  // tiny: 1024 tokens per step
    ->Args({1, 512, 4})  // small (~125M): 2048 tokens per step
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace tessera::executor

BENCHMARK_MAIN();
