// Compute time on one GPU: GEMMs at a shape-dependent efficiency, the
// attention core at a calibrated efficiency, and element-wise kernels bound by
// HBM bandwidth.
//
// GEMM efficiency follows the roofline (Williams et al. 2009): a bf16 GEMM of
// m x k by k x n does 2mnk FLOPs and moves 2(mk + kn + mn) bytes, so memory
// time over compute time is (1/m + 1/n + 1/k) * peak / HBM bandwidth. Thin
// matrices (large tp, small micro-batches) therefore run slower:
//   efficiency(m, n, k) = gemm_peak_efficiency /
//       (1 + gemm_traffic_factor * (peak / hbm) * (1/m + 1/n + 1/k)).
// The formula is symmetric in m, n, k, so a backward pass (data and weight
// gradients: the same dimensions, transposed) costs exactly 2x the forward.
//
//   LayerComputeTimes t = ForwardLayerTimes(model, gpu, calibration, shard);
//   double backward_s = 2 * t.total_s();
#pragma once

#include "core/gpu.h"
#include "core/model.h"
#include "planner/calibration.h"
#include "planner/layer_shard.h"

namespace tessera::planner {

// Achieved fraction of the dense peak for an m x k by k x n GEMM.
double GemmEfficiency(double m, double n, double k, const GpuSpec& gpu,
                      const Calibration& calibration);

// Seconds for an m x k by k x n GEMM.
double GemmTimeS(double m, double n, double k, const GpuSpec& gpu,
                 const Calibration& calibration);

// One layer's forward on one GPU for one micro-batch.
struct LayerComputeTimes {
  double gemm_s = 0;         // QKV, output projection, MLP
  double attention_s = 0;    // QK^T, softmax, PV
  double elementwise_s = 0;  // norms, activation, residuals (memory-bound)
  double total_s() const { return gemm_s + attention_s + elementwise_s; }
};

// Local GEMMs (tokens M = micro_batch * seq_len / cp): QKV M x h x (h +
// 2*kv_dim)/tp, projection M x h/tp x h, MLP in M x h x (2 or 1)*ffn/tp, MLP
// out M x ffn/tp x h. Attention: 4*b*(s/cp)*s*h/tp FLOPs at
// attention_efficiency. Element-wise: elementwise_traffic_factor x the layer's
// saved activations without scores (activations.h) over the HBM bandwidth.
LayerComputeTimes ForwardLayerTimes(const ModelConfig& model,
                                    const GpuSpec& gpu,
                                    const Calibration& calibration,
                                    const LayerShard& shard);

// The output projection's forward (M x h x V/tp) plus the loss's element-wise
// pass over the fp32 logits.
double LogitsForwardTimeS(const ModelConfig& model, const GpuSpec& gpu,
                          const Calibration& calibration,
                          const LayerShard& shard);

// One AdamW step over `local_params` parameters: memory-bound,
// optimizer_bytes_per_param per parameter over the HBM bandwidth.
double OptimizerStepTimeS(double local_params, const GpuSpec& gpu,
                          const Calibration& calibration);

}  // namespace tessera::planner
