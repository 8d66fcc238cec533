// The dimensions of a decoder-only transformer (Llama family, or GPT blocks for
// the published Megatron tables), its presets, and its parameter counts.
//
//   absl::StatusOr<ModelConfig> m = ModelPreset("llama3-8b");
//   int64_t n = m->ParamCount();   // 8.03e9
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tessera {

// The feed-forward block of each layer.
enum class MlpKind {
  kSwiGlu,  // Llama: gate and up (h x ffn each), SiLU(gate) * up, down (ffn x
            // h).
  kGelu,    // GPT: up (h x ffn), GELU, down (ffn x h); with biases.
};

absl::string_view MlpKindName(MlpKind kind);
absl::StatusOr<MlpKind> ParseMlpKind(absl::string_view text);

// A decoder-only transformer. Sequence length belongs to training, not here.
struct ModelConfig {
  std::string name;  // preset name, or "custom"
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;  // grouped-query attention; == heads for MHA
  int64_t ffn_hidden = 0;
  int64_t vocab = 0;
  MlpKind mlp = MlpKind::kSwiGlu;
  bool tie_embeddings = false;  // output projection shares the embedding
  double rope_theta = 10000.0;  // rotary base (Llama 3: 500000)
  double norm_eps = 1e-5;       // RMSNorm epsilon

  int64_t head_dim() const { return hidden / heads; }
  int64_t kv_dim() const { return kv_heads * head_dim(); }

  // Weights of one transformer layer: attention (q, k, v, o), MLP, and norms
  // (RMSNorm: h per norm; GPT LayerNorm: 2h per norm plus linear biases).
  int64_t ParamsPerLayer() const;
  // Attention projections only (Wq, Wk, Wv, Wo), without biases.
  int64_t AttentionParamsPerLayer() const;
  // MLP matrices only, without biases.
  int64_t MlpParamsPerLayer() const;
  // Input embedding (vocab x hidden).
  int64_t EmbeddingParams() const { return vocab * hidden; }
  // Output projection (0 when tied) plus the final norm.
  int64_t OutputParams() const;
  int64_t ParamCount() const;
};

// Checks that every dimension is positive and consistent (heads divide hidden,
// kv_heads divide heads). The error names the field: "model.kv_heads: ...".
absl::Status ValidateModel(const ModelConfig& model);

// The published presets: llama2-7b, llama2-13b, llama2-70b, llama3-8b,
// llama3-70b, llama3-405b, gpt3-175b, gpt-530b, and `tiny` / `small` for CPU
// trials. NotFound names the preset and lists the known ones.
// The presets are data: core/presets/models.json, compiled in (each with its
// source there).
absl::StatusOr<ModelConfig> ModelPreset(absl::string_view name);
std::vector<std::string> ModelPresetNames();

// Parses a model presets file's text (core/presets/models.json's format):
// every entry's fields known, present and valid (ValidateModel), names
// unique. INVALID_ARGUMENT naming `file`, the entry and the field.
absl::StatusOr<std::vector<ModelConfig>> ParseModelPresets(
    const std::string& file, absl::string_view text);

}  // namespace tessera
