// Compute time on one GPU: GEMMs at a shape-dependent efficiency (in bf16, or
// in fp8 for the linear layers when the training says so), the attention core
// at a calibrated, sequence-length-dependent efficiency, and element-wise
// kernels bound by HBM bandwidth.
//
// GEMM efficiency follows the roofline (Williams et al. 2009): a GEMM of
// m x k by k x n does 2mnk FLOPs and moves (mk + kn + mn) elements, so memory
// time over compute time is (1/m + 1/n + 1/k) * bytes per element * peak /
// HBM bandwidth / 2. Thin matrices (large tp, small micro-batches) therefore
// run slower:
//   efficiency(m, n, k) = peak_efficiency /
//       (1 + gemm_traffic_factor * (peak / hbm) * (bytes/2) * (1/m+1/n+1/k)),
// with the bf16 peak and gemm_peak_efficiency, or the fp8 peak and
// fp8_gemm_efficiency (1-byte operands). fp8 GEMMs also pay their scaling
// and casting kernels: fp8_cast_traffic_factor x the bf16 bytes of their
// operands, over the HBM bandwidth. The output layer stays in bf16.
// The formula is symmetric in m, n, k, so a backward pass (data and weight
// gradients: the same dimensions, transposed) costs exactly 2x the forward.
// So do the element-wise kernels. The attention core does not: a flash
// kernel's backward recomputes the scores it never stored (see
// AttentionBackwardFactor).
//
// Attention: the kernel computes the whole s x s square when materialised and
// half of it (the causal triangle) when it is a flash kernel, at
//   attention_efficiency * s / (s + attention_seq_half_tokens)
// of the bf16 peak, s the sequence length one rank attends over (s/cp).
//
//   LayerComputeTimes t = ForwardLayerTimes(model, gpu, stack, c, shard);
//   double backward_s = LayerBackwardTimeS(t, stack, recompute);
#pragma once

#include "core/gpu.h"
#include "core/model.h"
#include "core/workload.h"
#include "costmodel/calibration/calibration.h"
#include "core/layer_shard.h"
#include "costmodel/stacks/training_stack.h"

namespace tessera::costmodel {

// Achieved fraction of the precision's dense peak for an m x k by k x n GEMM.
double GemmEfficiency(double m, double n, double k, const GpuSpec& gpu,
                      const Calibration& calibration,
                      Precision precision = Precision::kBf16);

// Seconds for an m x k by k x n GEMM (without fp8 casting).
double GemmTimeS(double m, double n, double k, const GpuSpec& gpu,
                 const Calibration& calibration,
                 Precision precision = Precision::kBf16);

// One layer's forward on one GPU for one micro-batch.
struct LayerComputeTimes {
  double gemm_s = 0;         // QKV, output projection, MLP
  double attention_s = 0;    // QK^T, softmax, PV
  double elementwise_s = 0;  // norms, activation, residuals, fp8 casts
  // Each linear GEMM's time (LayerGemm order), for selective recomputation.
  double gemm_by_kind_s[static_cast<int>(LayerGemm::kCount)] = {};
  double total_s() const { return gemm_s + attention_s + elementwise_s; }
};

// Local GEMMs (tokens M = micro_batch * seq_len / cp), fused as stacks run
// them: QKV M x h x (h + 2*kv_dim)/tp, projection M x h/tp x h, MLP in M x h
// x (2 or 1)*ffn/tp (SwiGLU gate and up, or GELU's up), MLP out M x ffn/tp x
// h; each fused GEMM's time is shared among its parts (gemm_by_kind_s) by
// their widths. Attention: 4*b*(s/cp)*s*h/tp FLOPs counted,
// half of them computed by flash kernels. Element-wise:
// elementwise_traffic_factor x LayerElementwiseReferenceBytes over the HBM
// bandwidth, plus fp8 casting.
LayerComputeTimes ForwardLayerTimes(const ModelConfig& model,
                                    const GpuSpec& gpu,
                                    const TrainingStack& stack,
                                    const Calibration& calibration,
                                    const LayerShard& shard);

// The attention core's backward time over its forward time. A flash kernel
// keeps no s x s probabilities, so its backward recomputes the scores
// (Q K^T) before the four gradient products (dV = P^T dO, dP = dO V^T,
// dQ = dS K, dK = dS^T Q): five s x s x d products against the forward's
// two, 2.5x (FlashAttention-2, Dao 2023, sec. 3.2; flash-attn's and
// FlashAttention-3's benchmarks count backward FLOPs as 2.5x the forward's,
// so their TFLOP/s and attention_efficiency are on the same FLOPs). A
// materialised kernel reads its saved probabilities: 2x.
double AttentionBackwardFactor(AttentionKernel kernel);

// The attention core's backward time: AttentionBackwardFactor of the stack's
// kernel x its forward time.
double AttentionBackwardTimeS(const LayerComputeTimes& forward,
                              const TrainingStack& stack);

// One layer's backward for one micro-batch: 2x the forward's GEMMs and
// element-wise kernels, the attention core's backward
// (AttentionBackwardFactor x its forward), plus what `recompute` re-runs
// (LayerRecomputeTimeS).
double LayerBackwardTimeS(const LayerComputeTimes& forward,
                          const TrainingStack& stack, Recompute recompute);

// The extra forward work the backward pass of one layer re-runs under
// `recompute` and the stack's policy: the whole forward (full); the GEMMs,
// attention core and element-wise kernels the selective policy names, or the
// whole forward of a fraction of the layers (layer policies); nothing (none).
double LayerRecomputeTimeS(const LayerComputeTimes& forward,
                           const TrainingStack& stack, Recompute recompute);

// The output projection's forward (M x h x V/tp, bf16) plus the loss's
// element-wise pass over the logits.
double LogitsForwardTimeS(const ModelConfig& model, const GpuSpec& gpu,
                          const Calibration& calibration,
                          const LayerShard& shard);

// One AdamW step over `local_params` parameters: memory-bound,
// optimizer_bytes_per_param per parameter over the HBM bandwidth.
double OptimizerStepTimeS(double local_params, const GpuSpec& gpu,
                          const Calibration& calibration);

}  // namespace tessera::costmodel
