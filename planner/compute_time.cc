#include "planner/compute_time.h"

#include "planner/activations.h"
#include "planner/flops.h"

namespace tessera::planner {
namespace {

double PeakFlops(const GpuSpec& gpu) { return gpu.peak_dense_tflops * 1e12; }
double HbmBytesPerS(const GpuSpec& gpu) { return gpu.hbm_gbs * 1e9; }

}  // namespace

double GemmEfficiency(double m, double n, double k, const GpuSpec& gpu,
                      const Calibration& c) {
  // Roofline: memory/compute time = (1/m + 1/n + 1/k) * peak / bandwidth.
  const double flops_per_byte = PeakFlops(gpu) / HbmBytesPerS(gpu);
  return c.gemm_peak_efficiency /
         (1 + c.gemm_traffic_factor * flops_per_byte * (1 / m + 1 / n + 1 / k));
}

double GemmTimeS(double m, double n, double k, const GpuSpec& gpu,
                 const Calibration& c) {
  return 2 * m * n * k / (PeakFlops(gpu) * GemmEfficiency(m, n, k, gpu, c));
}

LayerComputeTimes ForwardLayerTimes(const ModelConfig& model,
                                    const GpuSpec& gpu, const Calibration& c,
                                    const LayerShard& shard) {
  const double t = static_cast<double>(shard.tp);
  const double tokens = shard.local_tokens();
  const double h = static_cast<double>(model.hidden);
  const double kv_dim = static_cast<double>(model.kv_dim());
  const double ffn = static_cast<double>(model.ffn_hidden);
  const double mlp_in = model.mlp == MlpKind::kSwiGlu ? 2 * ffn : ffn;
  LayerComputeTimes r;
  r.gemm_s = GemmTimeS(tokens, (h + 2 * kv_dim) / t, h, gpu, c) +
             GemmTimeS(tokens, h, h / t, gpu, c) +
             GemmTimeS(tokens, mlp_in / t, h, gpu, c) +
             GemmTimeS(tokens, h, ffn / t, gpu, c);
  // 4*b*s*s*h split over tp heads and cp query blocks: this rank's queries
  // against every key.
  const double attention_flops =
      ForwardLayerFlops(model, shard.micro_batch, shard.seq_len)
          .attention_core /
      (t * static_cast<double>(shard.cp));
  r.attention_s = attention_flops / (PeakFlops(gpu) * c.attention_efficiency);
  r.elementwise_s = c.elementwise_traffic_factor *
                    LayerActivationBytes(model, shard, Recompute::kSelective) /
                    HbmBytesPerS(gpu);
  return r;
}

double LogitsForwardTimeS(const ModelConfig& model, const GpuSpec& gpu,
                          const Calibration& c, const LayerShard& shard) {
  const double v = static_cast<double>(model.vocab) / shard.tp;
  return GemmTimeS(shard.local_tokens(), v, static_cast<double>(model.hidden),
                   gpu, c) +
         c.elementwise_traffic_factor * LogitsActivationBytes(model, shard) /
             HbmBytesPerS(gpu);
}

double OptimizerStepTimeS(double local_params, const GpuSpec& gpu,
                          const Calibration& c) {
  return local_params * c.optimizer_bytes_per_param / HbmBytesPerS(gpu);
}

}  // namespace tessera::planner
