#include "core/model_flops.h"

namespace tessera {
namespace {

// 2 * 2 * seq_len * heads * head_dim per layer per token (QK^T and PV).
double AttentionCoreForwardFlopsPerToken(const ModelConfig& m, int64_t s) {
  return 4.0 * static_cast<double>(s) * static_cast<double>(m.heads) *
         static_cast<double>(m.head_dim()) * static_cast<double>(m.layers);
}

}  // namespace

int64_t MatmulParams(const ModelConfig& m) {
  return m.layers * (m.AttentionParamsPerLayer() + m.MlpParamsPerLayer()) +
         m.vocab * m.hidden;
}

double ForwardFlopsPerToken(const ModelConfig& m, int64_t seq_len) {
  return 2.0 * static_cast<double>(MatmulParams(m)) +
         AttentionCoreForwardFlopsPerToken(m, seq_len);
}

double ModelFlopsPerStep(const ModelConfig& m, int64_t global_batch,
                         int64_t seq_len) {
  return 3.0 * ForwardFlopsPerToken(m, seq_len) *
         static_cast<double>(global_batch) * static_cast<double>(seq_len);
}

double HardwareFlopsPerStep(const ModelConfig& m, int64_t global_batch,
                            int64_t seq_len, Recompute recompute) {
  const double tokens =
      static_cast<double>(global_batch) * static_cast<double>(seq_len);
  double extra_per_token = 0;
  if (recompute == Recompute::kFull) {
    extra_per_token = ForwardFlopsPerToken(m, seq_len) -
                      2.0 * static_cast<double>(m.vocab * m.hidden);
  } else if (recompute == Recompute::kSelective) {
    extra_per_token = AttentionCoreForwardFlopsPerToken(m, seq_len);
  }
  return ModelFlopsPerStep(m, global_batch, seq_len) + extra_per_token * tokens;
}

}  // namespace tessera
