// A model given as a preset, explicit dimensions, or a preset with some
// dimensions overridden — how study files, `tessera plan` and `tessera-trial`
// all name a model.
//
//   ModelOverrides o;
//   o.layers = 2;  // a 2-layer llama3-8b, for a scaled-down trial
//   TESSERA_ASSIGN_OR_RETURN(ModelConfig m, ResolveModel("llama3-8b", o));
//   // m.name == "custom", m.hidden == 4096, m.layers == 2
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/model.h"

namespace tessera {

// Bounds beyond which no study is meaningful (the largest published models
// have hidden 20480, ffn 81920, vocab 256000, 126 layers). They keep every
// int64 count in core and the planner far from overflow: a model's parameters
// stay below 2^55, the world below 2^27 GPUs, a step below 2^48 tokens.
inline constexpr int64_t kMaxLayers = 1 << 14;
inline constexpr int64_t kMaxHidden = 1 << 18;  // also bounds heads
inline constexpr int64_t kMaxFfnHidden = 1 << 20;
inline constexpr int64_t kMaxVocab = 1 << 22;
inline constexpr int64_t kMaxNodes = 1 << 17;
inline constexpr int64_t kMaxGpusPerNode = 1 << 10;
inline constexpr int64_t kMaxGlobalBatch = 1 << 24;  // sequences
inline constexpr int64_t kMaxSeqLen = 1 << 24;       // tokens

// Explicit model fields; unset ones keep the preset's value.
struct ModelOverrides {
  std::optional<int64_t> layers, hidden, heads, kv_heads, ffn_hidden, vocab;
  std::optional<std::string> mlp;  // "swiglu" or "gelu"
  std::optional<bool> tie_embeddings;
  std::optional<double> rope_theta, norm_eps;

  bool any_dimension() const {
    return layers || hidden || heads || kv_heads || ffn_hidden || vocab;
  }
};

// The preset (when given and non-empty), then every override over it.
// Without a preset, layers, hidden, heads, ffn_hidden and vocab are required;
// kv_heads defaults to heads and mlp to swiglu. The name is the preset's when
// no override changes it, else "custom". The result is validated
// (ValidateModel). INVALID_ARGUMENT names the field: "model.preset: unknown
// preset 'x' (known: ...)", "model.hidden: required without a preset",
// "model.layers: must be an integer in [1, 16384], got 0".
absl::StatusOr<ModelConfig> ResolveModel(
    const std::optional<std::string>& preset, const ModelOverrides& overrides);

}  // namespace tessera
