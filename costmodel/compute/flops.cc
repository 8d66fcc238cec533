#include "costmodel/compute/flops.h"

namespace tessera::costmodel {

LayerFlops ForwardLayerFlops(const ModelConfig& m, int64_t micro_batch,
                             int64_t seq_len) {
  const double s = static_cast<double>(seq_len);
  const double tokens = static_cast<double>(micro_batch) * s;
  const double h = static_cast<double>(m.hidden);
  const double kv_dim = static_cast<double>(m.kv_dim());
  const double ffn = static_cast<double>(m.ffn_hidden);
  const double mlp_matrices = m.mlp == MlpKind::kSwiGlu ? 3 : 2;
  LayerFlops f;
  // Q (h x h) and K, V (h x kv_dim each): 2 FLOPs per weight per token.
  f.qkv = 2 * tokens * h * (h + 2 * kv_dim);
  // QK^T and PV: 2*b*s*s*h each (Narayanan et al. 2021, Appendix: 4bs^2h).
  f.attention_core = 4 * tokens * s * h;
  f.out_proj = 2 * tokens * h * h;
  // SwiGLU: gate, up (h x ffn) and down (ffn x h); GELU: up and down.
  f.mlp = 2 * tokens * h * ffn * mlp_matrices;
  return f;
}

double LogitsForwardFlops(const ModelConfig& m, int64_t micro_batch,
                          int64_t seq_len) {
  // 2*b*s*h*V (Narayanan et al. 2021, Appendix).
  return 2.0 * micro_batch * seq_len * m.hidden * static_cast<double>(m.vocab);
}

double RecomputeLayerFlops(const ModelConfig& m, Recompute recompute,
                           int64_t micro_batch, int64_t seq_len) {
  switch (recompute) {
    case Recompute::kNone:
      return 0;
    case Recompute::kSelective:  // Korthikanti et al. 2022, Section 5
      return ForwardLayerFlops(m, micro_batch, seq_len).attention_core;
    case Recompute::kFull:
      return ForwardLayerFlops(m, micro_batch, seq_len).total();
  }
  return 0;
}

}  // namespace tessera::costmodel
