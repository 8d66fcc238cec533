#include "costmodel/memory/layer_activations.h"

#include <algorithm>

namespace tessera::costmodel {
namespace {

bool Keeps(const std::vector<SavedTensor>& list, SavedTensor t) {
  return std::find(list.begin(), list.end(), t) != list.end();
}

double ListBytes(const std::vector<SavedTensor>& list, const ModelConfig& m,
                 const LayerShard& shard, const TrainingStack& stack) {
  double bytes = 0;
  for (SavedTensor t : list) bytes += SavedTensorBytes(t, m, shard, stack);
  return bytes;
}

// One layer's dimensions on this GPU.
struct Dims {
  bool swiglu;
  double tokens, tp, h, kv, ffn;
  double replicated_div;  // tp with sequence parallelism, else 1
};

Dims DimsOf(const ModelConfig& m, const LayerShard& shard) {
  const double tp = static_cast<double>(shard.tp);
  return Dims{m.mlp == MlpKind::kSwiGlu,
              shard.local_tokens(),
              tp,
              static_cast<double>(m.hidden),
              static_cast<double>(m.kv_dim()),
              static_cast<double>(m.ffn_hidden),
              shard.sp ? tp : 1.0};
}

}  // namespace

double SavedTensorBytes(SavedTensor t, const ModelConfig& m,
                        const LayerShard& shard, const TrainingStack& stack) {
  const auto [swiglu, tokens, tp, h, kv, ffn, replicated_div] =
      DimsOf(m, shard);
  // Linear layers' inputs in fp8 under Transformer Engine.
  const double input_bytes =
      shard.precision == Precision::kFp8 && stack.fp8_saves_linear_inputs ? 1
                                                                          : 2;
  switch (t) {
    case SavedTensor::kLayerInput:
    case SavedTensor::kAttnResidual:
      return tokens * 2 * h / replicated_div;
    case SavedTensor::kAttnNormOut:
    case SavedTensor::kMlpNormOut:
      return tokens * input_bytes * h / replicated_div;
    case SavedTensor::kQ:
      return tokens * 2 * h / tp;
    case SavedTensor::kK:
    case SavedTensor::kV:
      return tokens * 2 * kv / tp;
    case SavedTensor::kAttnOut:
      // The output, and flash attention's fp32 log-sum-exp per head.
      return tokens * (input_bytes * h +
                       (stack.attention == AttentionKernel::kFlash
                            ? 4.0 * static_cast<double>(m.heads)
                            : 0.0)) /
             tp;
    case SavedTensor::kAttnScores: {
      const double bytes_per_score =
          Keeps(stack.saved, SavedTensor::kDropoutMasks) ? 5 : 2;
      return tokens * static_cast<double>(shard.seq_len) *
             static_cast<double>(m.heads) * bytes_per_score / tp;
    }
    case SavedTensor::kMlpGate:
    case SavedTensor::kMlpAct:
      return swiglu ? tokens * 2 * ffn / tp : 0;
    case SavedTensor::kMlpUp:
      return tokens * 2 * ffn / tp;
    case SavedTensor::kMlpDownIn:
      return tokens * input_bytes * ffn / tp;
    case SavedTensor::kMlpOut:
      return tokens * 2 * h;
    case SavedTensor::kDropoutMasks:
      return tokens * 2 * h / replicated_div;
    case SavedTensor::kCount:
      break;
  }
  return 0;
}

double LayerActivationBytes(const ModelConfig& m, const LayerShard& shard,
                            const TrainingStack& stack, Recompute recompute,
                            const Calibration& c) {
  const double scale = c.saved_activation_factor;
  const double all = ListBytes(stack.saved, m, shard, stack);
  const double input = SavedTensorBytes(SavedTensor::kLayerInput, m, shard, stack);
  switch (recompute) {
    case Recompute::kNone:
      return scale * all;
    case Recompute::kFull:
      return scale * input;
    case Recompute::kSelective: {
      const SelectiveRecompute& p = stack.selective;
      const double kept = ListBytes(p.saved, m, shard, stack);
      const double f = p.full_recompute_layer_fraction;
      return scale * (f > 0 ? f * input + (1 - f) * kept : kept);
    }
  }
  return scale * all;
}

double LayerRecomputeExtraBytes(const ModelConfig& m, const LayerShard& shard,
                                const TrainingStack& stack, Recompute recompute,
                                const Calibration& c) {
  if (recompute == Recompute::kNone) return 0;
  const double whole = LayerWorkingSetBytes(m, shard, stack, c);
  const bool whole_layers =
      recompute == Recompute::kFull ||
      stack.selective.full_recompute_layer_fraction > 0;
  const double kept =
      whole_layers
          ? c.saved_activation_factor *
                SavedTensorBytes(SavedTensor::kLayerInput, m, shard, stack)
          : LayerActivationBytes(m, shard, stack, recompute, c);
  return std::max(0.0, whole - kept);
}

double LayerWorkingSetBytes(const ModelConfig& m, const LayerShard& shard,
                            const TrainingStack& stack, const Calibration& c) {
  return LayerActivationBytes(m, shard, stack, Recompute::kNone, c);
}

double LayerElementwiseReferenceBytes(const ModelConfig& m,
                                      const LayerShard& shard) {
  const Dims d = DimsOf(m, shard);
  const double replicated = 4 * d.h / d.replicated_div;
  const double split = 2 * d.h + 2 * d.kv + (d.swiglu ? 3 : 2) * d.ffn;
  return d.tokens * 2 * (replicated + split / d.tp);
}

double LogitsWorkingSetBytes(const ModelConfig& m, const LayerShard& shard,
                             const Calibration& c) {
  return c.logits_bytes_per_element * shard.local_tokens() *
         static_cast<double>(m.vocab) / static_cast<double>(shard.tp);
}

}  // namespace tessera::costmodel
