#include "planner/activations.h"

namespace tessera::planner {
namespace {

struct ActivationParts {
  double replicated = 0;  // divided by tp only with sequence parallelism
  double split = 0;       // divided by tp
  double scores = 0;      // divided by tp; dropped by selective recomputation
};

ActivationParts Parts(const ModelConfig& m, const LayerShard& shard) {
  const bool gpt = m.mlp == MlpKind::kGelu;
  const double tokens = shard.local_tokens();
  const double h = static_cast<double>(m.hidden);
  const double kv_dim = static_cast<double>(m.kv_dim());
  const double ffn = static_cast<double>(m.ffn_hidden);
  ActivationParts p;
  // Korthikanti et al. 2022, Section 4.1: norms 4sbh, QKV and MLP inputs 4sbh,
  // dropout masks 2sbh (GPT only).
  p.replicated = tokens * h * (gpt ? 10 : 8);
  // Q 2sbh, K and V 2*2*s*b*kv_dim, projection input 2sbh; MLP: GELU fc1 and
  // GELU outputs 2*2*s*b*ffn, SwiGLU gate, up and product 3*2*s*b*ffn.
  p.split = tokens * (2 * h + 4 * kv_dim + 2 * h + (gpt ? 4 : 6) * ffn);
  // Softmax output (and, with GPT's attention dropout, mask and output):
  // 5as^2b (GPT) or 2as^2b (Llama), over s/cp queries and s keys.
  p.scores = tokens * static_cast<double>(shard.seq_len) *
             static_cast<double>(m.heads) * (gpt ? 5 : 2);
  return p;
}

}  // namespace

double LayerActivationBytes(const ModelConfig& m, const LayerShard& shard,
                            Recompute recompute) {
  const double t = static_cast<double>(shard.tp);
  const double replicated_div = shard.sp ? t : 1.0;
  if (recompute == Recompute::kFull) {
    // Only the layer's input, 2sbh (Korthikanti et al. 2022, Section 5).
    return 2 * shard.local_tokens() * m.hidden / replicated_div;
  }
  const ActivationParts p = Parts(m, shard);
  double bytes = p.replicated / replicated_div + p.split / t;
  if (recompute == Recompute::kNone) bytes += p.scores / t;
  return bytes;
}

double LayerWorkingSetBytes(const ModelConfig& m, const LayerShard& shard) {
  return LayerActivationBytes(m, shard, Recompute::kNone);
}

double LogitsActivationBytes(const ModelConfig& m, const LayerShard& shard) {
  return 4 * shard.local_tokens() * static_cast<double>(m.vocab) / shard.tp;
}

}  // namespace tessera::planner
