// The CUDA backend's kernels at the ~1B Llama's shapes (bench/cuda/run_1b.sh's
// model: hidden 2048, 16 heads, 8 kv heads, head_dim 128, ffn 5632, vocab
// 32000; 4 x 2048 tokens), timed with CUDA events (Google Benchmark's manual
// time), with TFLOP/s for the GEMMs and attention and GB/s for the memory-
// bound kernels: where a step's time goes, kernel by kernel. Not run by
// ctest; on a GPU machine:
//   build/bench/cuda/cuda_kernels_bench --benchmark_counters_tabular=true
#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "executor/cuda/cuda_backend.h"

namespace tessera::executor {
namespace {

constexpr int64_t kHidden = 2048, kHeads = 16, kKvHeads = 8, kHeadDim = 128;
constexpr int64_t kFfn = 5632, kVocab = 32000;
constexpr int64_t kBatch = 4, kSeq = 2048, kTokens = kBatch * kSeq;

// One backend for the whole program (nullptr without a device).
CudaBackend* Gpu() {
  static CudaBackend* gpu = [] {
    absl::StatusOr<std::unique_ptr<CudaBackend>> b = CudaBackend::Create();
    return b.ok() ? b->release() : nullptr;
  }();
  return gpu;
}

DeviceBuffer Filled(int64_t n, DType dtype, float value) {
  DeviceBuffer b = std::move(*Gpu()->Allocate(n, dtype, "bench"));
  if (dtype != DType::kI32) Gpu()->Fill(b.view(), n, value);
  return b;
}

// Times `body` with events on the backend's stream, one iteration each.
template <typename Body>
void TimeOnGpu(benchmark::State& state, Body&& body) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  body();  // warm-up (plans, caches)
  for (auto _ : state) {
    cudaEventRecord(start, Gpu()->stream());
    body();
    cudaEventRecord(stop, Gpu()->stream());
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    state.SetIterationTime(ms / 1e3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

bool SkipWithoutGpu(benchmark::State& state) {
  std::string why;
  if (Gpu() != nullptr) return false;
  CudaDeviceAvailable(&why);
  state.SkipWithError(("no CUDA device: " + why).c_str());
  return true;
}

// Row-major c[m,n] = op(a) op(b): forward (x W^T) or weight gradient
// (dY^T X, f32 C, beta 1).
void BM_Gemm(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const bool weight_grad = state.range(3) != 0;
  DeviceBuffer a = Filled(m * k, DType::kBF16, 0.01f);
  DeviceBuffer b = Filled(k * n, DType::kBF16, -0.02f);
  DeviceBuffer c =
      Filled(m * n, weight_grad ? DType::kF32 : DType::kBF16, 0.0f);
  TimeOnGpu(state, [&] {
    Gpu()->Gemm(weight_grad, !weight_grad, m, n, k, 1.0f, a.view(), b.view(),
                weight_grad ? 1.0f : 0.0f, c.view());
  });
  state.counters["TFLOP/s"] = benchmark::Counter(
      2.0 * m * n * k * 1e-12, benchmark::Counter::kIsIterationInvariantRate);
}
// Forward GEMMs of one layer and the head (m = tokens).
BENCHMARK(BM_Gemm)
    ->ArgNames({"m", "n", "k", "wgrad"})
    ->Args({kTokens, (kHeads + 2 * kKvHeads) * kHeadDim, kHidden, 0})
    ->Args({kTokens, kHidden, kHeads* kHeadDim, 0})
    ->Args({kTokens, 2 * kFfn, kHidden, 0})
    ->Args({kTokens, kHidden, kFfn, 0})
    // Weight gradients: [out, in] += dY^T X over the tokens.
    ->Args({2 * kFfn, kHidden, kTokens, 1})
    ->Args({kHidden, kFfn, kTokens, 1})
    ->Args({kVocab, kHidden, kTokens, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void BM_Logits(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  DeviceBuffer x = Filled(kTokens * kHidden, DType::kBF16, 0.01f);
  DeviceBuffer w = Filled(kVocab * kHidden, DType::kBF16, 0.02f);
  DeviceBuffer logits = Filled(kTokens * kVocab, DType::kF32, 0.0f);
  TimeOnGpu(state, [&] {
    Gpu()->Gemm(false, true, kTokens, kVocab, kHidden, 1.0f, x.view(), w.view(),
                0.0f, logits.view());
  });
  state.counters["TFLOP/s"] =
      benchmark::Counter(2.0 * kTokens * kVocab * kHidden * 1e-12,
                         benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Logits)->UseManualTime()->Unit(benchmark::kMillisecond);

// Causal attention of one layer: forward, or backward (from saved out, lse);
// cudnn 1: as a plain causal block (cuDNN's fused attention where it loads),
// cudnn 0: Tessera's own kernels (the path of ring attention's blocks).
// FLOPs counted as executed (the causal half): forward 2 matmuls, backward 5.
void BM_Attention(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  const bool backward = state.range(0) != 0;
  const bool cudnn = state.range(1) != 0;
  const AttentionShape s{kBatch, kSeq, kSeq, kHeads, kKvHeads, kHeadDim, cudnn};
  if (cudnn && Gpu()->attention_kernels().rfind("cuDNN", 0) != 0) {
    state.SkipWithError(Gpu()->attention_kernels().c_str());
    return;
  }
  const int64_t q_numel = kTokens * kHeads * kHeadDim;
  const int64_t kv_numel = kTokens * kKvHeads * kHeadDim;
  DeviceBuffer q = Filled(q_numel, DType::kBF16, 0.01f);
  DeviceBuffer k = Filled(kv_numel, DType::kBF16, 0.02f);
  DeviceBuffer v = Filled(kv_numel, DType::kBF16, 0.03f);
  std::vector<int32_t> pos(kSeq);
  for (int64_t i = 0; i < kSeq; ++i) pos[i] = static_cast<int32_t>(i);
  DeviceBuffer positions = Filled(kSeq, DType::kI32, 0);
  Gpu()->CopyFromHost(pos.data(), positions.view());
  DeviceBuffer out = Filled(q_numel, DType::kBF16, 0.0f);
  DeviceBuffer lse = Filled(kBatch * kHeads * kSeq, DType::kF32, 0.0f);
  Gpu()->AttentionForward(s, q.view(), k.view(), v.view(), positions.view(),
                          positions.view(), false, out.view(), lse.view());
  DeviceBuffer dout = Filled(q_numel, DType::kBF16, 0.01f);
  DeviceBuffer dq = Filled(q_numel, DType::kF32, 0.0f);
  DeviceBuffer dk = Filled(kv_numel, DType::kF32, 0.0f);
  DeviceBuffer dv = Filled(kv_numel, DType::kF32, 0.0f);
  TimeOnGpu(state, [&] {
    if (backward) {
      Gpu()->AttentionBackward(
          s, dout.view(), q.view(), k.view(), v.view(), out.view(), lse.view(),
          positions.view(), positions.view(), dq.view(), dk.view(), dv.view());
    } else {
      Gpu()->AttentionForward(s, q.view(), k.view(), v.view(), positions.view(),
                              positions.view(), false, out.view(), lse.view());
    }
  });
  const double causal_matmul =
      2.0 * kBatch * kHeads * kHeadDim * kSeq * kSeq / 2;  // one QK^T
  state.counters["TFLOP/s"] =
      benchmark::Counter((backward ? 5 : 2) * causal_matmul * 1e-12,
                         benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Attention)
    ->ArgNames({"backward", "cudnn"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({0, 1})
    ->Args({1, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void BM_RmsNorm(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  const bool backward = state.range(0) != 0;
  DeviceBuffer x = Filled(kTokens * kHidden, DType::kBF16, 0.5f);
  DeviceBuffer w = Filled(kHidden, DType::kBF16, 1.0f);
  DeviceBuffer y = Filled(kTokens * kHidden, DType::kBF16, 0.0f);
  DeviceBuffer rstd = Filled(kTokens, DType::kF32, 0.0f);
  DeviceBuffer dw = Filled(kHidden, DType::kF32, 0.0f);
  Gpu()->RmsNormForward(x.view(), w.view(), kTokens, kHidden, 1e-5f, y.view(),
                        rstd.view());
  TimeOnGpu(state, [&] {
    if (backward) {
      Gpu()->RmsNormBackward(y.view(), x.view(), w.view(), rstd.view(), kTokens,
                             kHidden, x.view(), dw.view());
    } else {
      Gpu()->RmsNormForward(x.view(), w.view(), kTokens, kHidden, 1e-5f,
                            y.view(), rstd.view());
    }
  });
  // Bytes: forward reads x, writes y; backward reads dy, x (twice) and dx,
  // writes dx.
  const double bytes = (backward ? 5.0 : 2.0) * kTokens * kHidden * 2;
  state.counters["GB/s"] = benchmark::Counter(
      bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_RmsNorm)
    ->ArgName("backward")
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void BM_SwiGlu(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  const bool backward = state.range(0) != 0;
  DeviceBuffer gu = Filled(kTokens * 2 * kFfn, DType::kBF16, 0.5f);
  DeviceBuffer out = Filled(kTokens * kFfn, DType::kBF16, 0.0f);
  DeviceBuffer dgu = Filled(kTokens * 2 * kFfn, DType::kBF16, 0.0f);
  TimeOnGpu(state, [&] {
    if (backward) {
      Gpu()->SwiGluBackward(out.view(), gu.view(), kTokens, kFfn, dgu.view());
    } else {
      Gpu()->SwiGluForward(gu.view(), kTokens, kFfn, out.view());
    }
  });
  const double bytes = (backward ? 5.0 : 3.0) * kTokens * kFfn * 2;
  state.counters["GB/s"] = benchmark::Counter(
      bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_SwiGlu)
    ->ArgName("backward")
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// The three cross-entropy kernels over f32 logits into bf16 dlogits.
void BM_CrossEntropy(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  DeviceBuffer logits = Filled(kTokens * kVocab, DType::kF32, 0.1f);
  DeviceBuffer dlogits = Filled(kTokens * kVocab, DType::kBF16, 0.0f);
  DeviceBuffer targets = Filled(kTokens, DType::kI32, 0);
  DeviceBuffer row_max = Filled(kTokens, DType::kF32, 0.0f);
  DeviceBuffer stats = Filled(2 * kTokens, DType::kF32, 0.0f);
  DeviceBuffer loss = Filled(kTokens, DType::kF32, 0.0f);
  TimeOnGpu(state, [&] {
    Gpu()->LogitsRowMax(logits.view(), kTokens, kVocab, row_max.view());
    Gpu()->LogitsSumExpAndTarget(logits.view(), targets.view(), row_max.view(),
                                 kTokens, 0, kVocab, stats.view());
    Gpu()->CrossEntropyBackward(logits.view(), targets.view(), row_max.view(),
                                stats.view(), kTokens, 0, kVocab, 1e-4f,
                                loss.view(), dlogits.view());
  });
  const double bytes = kTokens * kVocab * (3.0 * 4 + 2);
  state.counters["GB/s"] = benchmark::Counter(
      bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_CrossEntropy)->UseManualTime()->Unit(benchmark::kMillisecond);

// AdamW over the 1B model's 886M parameters (fp32 w, g, m, v).
void BM_AdamW(benchmark::State& state) {
  if (SkipWithoutGpu(state)) return;
  const int64_t n = 886114304;
  DeviceBuffer w = Filled(n, DType::kF32, 0.01f),
               g = Filled(n, DType::kF32, 0.001f);
  DeviceBuffer m = Filled(n, DType::kF32, 0.0f),
               v = Filled(n, DType::kF32, 0.0f);
  TimeOnGpu(state, [&] {
    Gpu()->AdamW(AdamWConfig{.step = 2}, true, w.view(), g.view(), m.view(),
                 v.view(), n);
  });
  state.counters["GB/s"] = benchmark::Counter(
      n * 7.0 * 4 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_AdamW)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera::executor

BENCHMARK_MAIN();
