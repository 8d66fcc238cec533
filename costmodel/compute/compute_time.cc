#include "costmodel/compute/compute_time.h"

#include "costmodel/compute/flops.h"
#include "costmodel/memory/layer_activations.h"

namespace tessera::costmodel {
namespace {

double HbmBytesPerS(const GpuSpec& gpu) { return gpu.hbm_gbs * 1e9; }

bool Fp8(const GpuSpec& gpu, Precision p) {
  return p == Precision::kFp8 && gpu.peak_fp8_tflops > 0;
}

double PeakFlops(const GpuSpec& gpu, Precision p) {
  return (Fp8(gpu, p) ? gpu.peak_fp8_tflops : gpu.peak_dense_tflops) * 1e12;
}

}  // namespace

double GemmEfficiency(double m, double n, double k, const GpuSpec& gpu,
                      const Calibration& c, Precision p) {
  const bool fp8 = Fp8(gpu, p);
  // Roofline: memory/compute time = (1/m + 1/n + 1/k) * bytes/2 * peak / bw.
  const double bytes_over_two = fp8 ? 0.5 : 1.0;
  const double flops_per_byte = PeakFlops(gpu, p) / HbmBytesPerS(gpu);
  const double peak_efficiency =
      fp8 ? c.fp8_gemm_efficiency : c.gemm_peak_efficiency;
  return peak_efficiency /
         (1 + c.gemm_traffic_factor * flops_per_byte * bytes_over_two *
                  (1 / m + 1 / n + 1 / k));
}

double GemmTimeS(double m, double n, double k, const GpuSpec& gpu,
                 const Calibration& c, Precision p) {
  return 2 * m * n * k / (PeakFlops(gpu, p) * GemmEfficiency(m, n, k, gpu, c, p));
}

LayerComputeTimes ForwardLayerTimes(const ModelConfig& model,
                                    const GpuSpec& gpu,
                                    const TrainingStack& stack,
                                    const Calibration& c,
                                    const LayerShard& shard) {
  const double t = static_cast<double>(shard.tp);
  const double tokens = shard.local_tokens();
  const double h = static_cast<double>(model.hidden);
  const double kv = static_cast<double>(model.kv_dim());
  const double ffn = static_cast<double>(model.ffn_hidden);
  const bool swiglu = model.mlp == MlpKind::kSwiGlu;
  const Precision p = shard.precision;
  // The fused GEMMs stacks run (QKV in one, gate and up in one), each
  // time shared among its parts by their output widths for recomputation.
  LayerComputeTimes r;
  double cast_bytes = 0;  // bf16 bytes of the fp8 GEMMs' operands
  auto gemm = [&](double n, double k,
                  std::initializer_list<std::pair<LayerGemm, double>> parts) {
    const double time_s = GemmTimeS(tokens, n, k, gpu, c, p);
    r.gemm_s += time_s;
    for (const auto& [kind, width] : parts) {
      r.gemm_by_kind_s[static_cast<int>(kind)] = time_s * width / n;
    }
    cast_bytes += 2 * (tokens * k + k * n);
  };
  gemm((h + 2 * kv) / t, h,
       {{LayerGemm::kQ, h / t}, {LayerGemm::kK, kv / t}, {LayerGemm::kV, kv / t}});
  gemm(h, h / t, {{LayerGemm::kOut, h}});
  if (swiglu) {
    gemm(2 * ffn / t, h,
         {{LayerGemm::kMlpGate, ffn / t}, {LayerGemm::kMlpUp, ffn / t}});
  } else {
    gemm(ffn / t, h, {{LayerGemm::kMlpUp, ffn / t}});
  }
  gemm(h, ffn / t, {{LayerGemm::kMlpDown, h}});
  // 4*b*s*s*h split over tp heads and cp query blocks: this rank's queries
  // against every key; flash kernels skip the masked half.
  const double counted_flops =
      ForwardLayerFlops(model, shard.micro_batch, shard.seq_len)
          .attention_core /
      (t * static_cast<double>(shard.cp));
  const double computed =
      stack.attention == AttentionKernel::kFlash ? 0.5 : 1.0;
  const double s = static_cast<double>(shard.seq_len) / shard.cp;
  const double efficiency =
      c.attention_efficiency * s / (s + c.attention_seq_half_tokens);
  r.attention_s = computed * counted_flops /
                  (PeakFlops(gpu, Precision::kBf16) * efficiency);
  r.elementwise_s = c.elementwise_traffic_factor *
                    LayerElementwiseReferenceBytes(model, shard) /
                    HbmBytesPerS(gpu);
  if (Fp8(gpu, p)) {
    r.elementwise_s += c.fp8_cast_traffic_factor * cast_bytes / HbmBytesPerS(gpu);
  }
  return r;
}

double AttentionBackwardFactor(AttentionKernel kernel) {
  return kernel == AttentionKernel::kFlash ? 2.5 : 2.0;
}

double AttentionBackwardTimeS(const LayerComputeTimes& f,
                              const TrainingStack& stack) {
  return AttentionBackwardFactor(stack.attention) * f.attention_s;
}

double LayerBackwardTimeS(const LayerComputeTimes& f,
                          const TrainingStack& stack, Recompute recompute) {
  return 2 * (f.gemm_s + f.elementwise_s) + AttentionBackwardTimeS(f, stack) +
         LayerRecomputeTimeS(f, stack, recompute);
}

double LayerRecomputeTimeS(const LayerComputeTimes& f,
                           const TrainingStack& stack, Recompute recompute) {
  switch (recompute) {
    case Recompute::kNone:
      return 0;
    case Recompute::kFull:
      return f.total_s();
    case Recompute::kSelective: {
      const SelectiveRecompute& p = stack.selective;
      double s = 0;
      for (LayerGemm g : p.recomputed_gemms) {
        s += f.gemm_by_kind_s[static_cast<int>(g)];
      }
      if (p.recomputes_attention_core) s += f.attention_s;
      if (p.recomputes_elementwise) s += f.elementwise_s;
      const double layers = p.full_recompute_layer_fraction;
      return layers > 0 ? layers * f.total_s() + (1 - layers) * s : s;
    }
  }
  return 0;
}

double LogitsForwardTimeS(const ModelConfig& model, const GpuSpec& gpu,
                          const Calibration& c, const LayerShard& shard) {
  const double v = static_cast<double>(model.vocab) / shard.tp;
  // The loss reads and writes the fp32 logits a few times: counted as the
  // element-wise factor over 4 bytes per logit.
  return GemmTimeS(shard.local_tokens(), v, static_cast<double>(model.hidden),
                   gpu, c) +
         c.elementwise_traffic_factor * 4 * shard.local_tokens() * v /
             HbmBytesPerS(gpu);
}

double OptimizerStepTimeS(double local_params, const GpuSpec& gpu,
                          const Calibration& c) {
  return local_params * c.optimizer_bytes_per_param / HbmBytesPerS(gpu);
}

}  // namespace tessera::costmodel
