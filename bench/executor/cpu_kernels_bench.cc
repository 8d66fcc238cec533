// CPU backend kernel throughput at the shapes of the `tiny` and `small`
// presets (core/model.h), one micro-batch of one sequence per rank:
//  - sgemm through CpuBackend::Gemm against the BLAS's own cblas_sgemm at the
//    same shapes (the backend's overhead: argument checks, the thread-setting
//    lock), GFLOP/s = 2 m n k / time;
//  - attention forward and backward (causal, GQA), GFLOP/s over the causal
//    half of the scores: forward 2 GEMMs (q k^T, p v), backward 5 (q k^T
//    again, dv, dp, dq, dk), each 2 s^2 d / 2 per head.
//
//   build-x/bench/executor/cpu_kernels_bench --benchmark_filter=small
//
// Each benchmark runs at 1 BLAS thread (rates over CPU time) and at all
// hardware threads (rates over wall time): the in-process engine's rank
// threads use 1 each when there are as many ranks as cores.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "core/model.h"
#include "core/usable_cpus.h"
#include "executor/cpu/cpu_backend.h"
#include "executor/cpu/gemm.h"

#ifdef TESSERA_HAVE_CBLAS
#include <cblas.h>
#endif

namespace tessera::executor {
namespace {

struct GemmShape {
  std::string name;
  bool trans_a = false;
  bool trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  float beta = 0;
};

// A Llama layer's GEMMs for `tokens` tokens (weights [out, in], y = x W^T):
// forward x W^T (NT), input gradient dy W (NN), weight gradient dy^T x (TN,
// accumulating with beta = 1); plus the output projection to the vocabulary.
std::vector<GemmShape> LayerGemms(const ModelConfig& m, int64_t tokens) {
  const int64_t h = m.hidden, qkv = m.hidden + 2 * m.kv_dim();
  const int64_t ffn2 = 2 * m.ffn_hidden, v = m.vocab;
  return {
      {"qkv_fwd", false, true, tokens, qkv, h, 0},
      {"attn_out_fwd", false, true, tokens, h, h, 0},
      {"gate_up_fwd", false, true, tokens, ffn2, h, 0},
      {"down_fwd", false, true, tokens, h, m.ffn_hidden, 0},
      {"gate_up_dx", false, false, tokens, h, ffn2, 0},
      {"gate_up_dw", true, false, ffn2, h, tokens, 1},
      {"lm_head_fwd", false, true, tokens, v, h, 0},
      {"lm_head_dw", true, false, v, h, tokens, 1},
  };
}

DeviceBuffer Filled(CpuBackend& backend, int64_t n, float value) {
  DeviceBuffer b = *backend.Allocate(n, DType::kF32, "bench");
  backend.Fill(b.view(), n, value);
  return b;
}

void SetGemmCounters(benchmark::State& state, const GemmShape& s) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * s.m * s.n * s.k * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate);
}

void BackendGemm(benchmark::State& state, GemmShape s) {
  CpuBackend backend({.blas_threads = static_cast<int>(state.range(0))});
  DeviceBuffer a = Filled(backend, s.m * s.k, 0.01f);
  DeviceBuffer b = Filled(backend, s.k * s.n, 0.02f);
  DeviceBuffer c = Filled(backend, s.m * s.n, 0.f);
  for (auto _ : state) {
    backend.Gemm(s.trans_a, s.trans_b, s.m, s.n, s.k, 1.f, a.view(), b.view(),
                 s.beta, c.view());
    benchmark::DoNotOptimize(c.view().data);
  }
  SetGemmCounters(state, s);
}

#ifdef TESSERA_HAVE_CBLAS
void DirectCblasGemm(benchmark::State& state, GemmShape s) {
  cpu::SetBlasThreads(static_cast<int>(state.range(0)));
  std::vector<float> a(s.m * s.k, 0.01f), b(s.k * s.n, 0.02f), c(s.m * s.n);
  const int lda = s.trans_a ? s.m : s.k, ldb = s.trans_b ? s.k : s.n;
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, s.trans_a ? CblasTrans : CblasNoTrans,
                s.trans_b ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.f,
                a.data(), lda, b.data(), ldb, s.beta, c.data(), s.n);
    benchmark::DoNotOptimize(c.data());
  }
  SetGemmCounters(state, s);
}
#endif

struct AttentionBuffers {
  AttentionShape shape;
  DeviceBuffer q, k, v, out, lse, dout, dq, dk, dv, pos;
};

AttentionBuffers MakeAttention(CpuBackend& backend, const ModelConfig& m,
                               int64_t seq) {
  AttentionBuffers a;
  a.shape = {1, seq, seq, m.heads, m.kv_heads, m.head_dim()};
  const int64_t qn = seq * m.heads * m.head_dim(), kvn = seq * m.kv_dim();
  a.q = Filled(backend, qn, 0.1f);
  a.k = Filled(backend, kvn, 0.2f);
  a.v = Filled(backend, kvn, 0.3f);
  a.out = Filled(backend, qn, 0.f);
  a.lse = Filled(backend, m.heads * seq, 0.f);
  a.dout = Filled(backend, qn, 0.01f);
  a.dq = Filled(backend, qn, 0.f);
  a.dk = Filled(backend, kvn, 0.f);
  a.dv = Filled(backend, kvn, 0.f);
  a.pos = *backend.Allocate(seq, DType::kI32, "positions");
  for (int64_t i = 0; i < seq; ++i) a.pos.view().data_as<int32_t>()[i] = i;
  return a;
}

void SetAttentionCounters(benchmark::State& state, const AttentionShape& s,
                          int gemms) {
  const double causal_flops =
      gemms * 2.0 * s.batch * s.heads * s.q_len * s.kv_len * s.head_dim / 2;
  state.counters["GFLOP/s"] = benchmark::Counter(
      causal_flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["tokens/s"] = benchmark::Counter(
      double(s.batch * s.q_len), benchmark::Counter::kIsIterationInvariantRate);
}

void AttentionForwardBench(benchmark::State& state, ModelConfig m,
                           int64_t seq) {
  CpuBackend backend({.blas_threads = static_cast<int>(state.range(0))});
  AttentionBuffers a = MakeAttention(backend, m, seq);
  for (auto _ : state) {
    backend.AttentionForward(a.shape, a.q.view(), a.k.view(), a.v.view(),
                             a.pos.view(), a.pos.view(), false, a.out.view(),
                             a.lse.view());
  }
  SetAttentionCounters(state, a.shape, 2);
}

void AttentionBackwardBench(benchmark::State& state, ModelConfig m,
                            int64_t seq) {
  CpuBackend backend({.blas_threads = static_cast<int>(state.range(0))});
  AttentionBuffers a = MakeAttention(backend, m, seq);
  backend.AttentionForward(a.shape, a.q.view(), a.k.view(), a.v.view(),
                           a.pos.view(), a.pos.view(), false, a.out.view(),
                           a.lse.view());
  for (auto _ : state) {
    backend.AttentionBackward(a.shape, a.dout.view(), a.q.view(), a.k.view(),
                              a.v.view(), a.out.view(), a.lse.view(),
                              a.pos.view(), a.pos.view(), a.dq.view(),
                              a.dk.view(), a.dv.view());
  }
  SetAttentionCounters(state, a.shape, 5);
}

// Registers `fn` at 1 BLAS thread (rates over CPU time: the work itself,
// whatever else the machine runs) and at all hardware threads (rates over
// wall time, the only honest measure of a multi-threaded call).
template <typename Fn, typename... Args>
void Register(const std::string& name, Fn fn, Args... args) {
  auto* one = benchmark::RegisterBenchmark(name.c_str(), fn, args...);
  one->ArgName("t")->Arg(1);
  const int hardware = tessera::UsableCpuCount();
  if (hardware > 1) {
    benchmark::RegisterBenchmark(name.c_str(), fn, args...)
        ->ArgName("t")
        ->Arg(hardware)
        ->UseRealTime();
  }
}

void RegisterAll() {
  // `tiny`: seq 128; `small` (~100M): seq 512.
  for (const auto& [preset, seq] :
       {std::pair<const char*, int64_t>{"tiny", 128}, {"small", 512}}) {
    const ModelConfig m = *ModelPreset(preset);
    for (const GemmShape& s : LayerGemms(m, seq)) {
      const std::string shape =
          absl::StrCat(preset, "/", s.name, "/", s.m, "x", s.n, "x", s.k);
      Register("sgemm_backend/" + shape, BackendGemm, s);
#ifdef TESSERA_HAVE_CBLAS
      Register("sgemm_cblas/" + shape, DirectCblasGemm, s);
#endif
    }
    const std::string attn =
        absl::StrCat(preset, "/s", seq, "_h", m.heads, "_kv", m.kv_heads, "_d",
                     m.head_dim());
    Register("attention_fwd/" + attn, AttentionForwardBench, m, seq);
    Register("attention_bwd/" + attn, AttentionBackwardBench, m, seq);
  }
}

}  // namespace
}  // namespace tessera::executor

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  tessera::executor::RegisterAll();
  benchmark::AddCustomContext("gemm",
                              tessera::executor::cpu::BlasDescription());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
