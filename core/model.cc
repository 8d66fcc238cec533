#include "core/model.h"

#include <array>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/known_names.h"

namespace tessera {
namespace {

struct NamedModel {
  const char* name;
  int64_t layers, hidden, heads, kv_heads, ffn_hidden, vocab;
  MlpKind mlp;
  bool tie_embeddings;
  double rope_theta;
};

// Sources: Llama 2 (Touvron et al. 2023, Table 1 and the released configs);
// Llama 3 / 3.1 (Dubey et al. 2024, Table 3 and the released configs); GPT-3
// 175B (Brown et al. 2020, Table 2.1) and the 530B model of Narayanan et al.
// SC'21 (Table 1), both with Megatron's padded GPT-2 vocabulary of 51200 and
// tied embeddings. `tiny` and `small` are Llama-shaped models of our own for
// CPU trials (~0.9M and ~125M parameters).
constexpr std::array<NamedModel, 10> kPresets = {{
    {"llama2-7b", 32, 4096, 32, 32, 11008, 32000, MlpKind::kSwiGlu, false,
     10000},
    {"llama2-13b", 40, 5120, 40, 40, 13824, 32000, MlpKind::kSwiGlu, false,
     10000},
    {"llama2-70b", 80, 8192, 64, 8, 28672, 32000, MlpKind::kSwiGlu, false,
     10000},
    {"llama3-8b", 32, 4096, 32, 8, 14336, 128256, MlpKind::kSwiGlu, false,
     500000},
    {"llama3-70b", 80, 8192, 64, 8, 28672, 128256, MlpKind::kSwiGlu, false,
     500000},
    {"llama3-405b", 126, 16384, 128, 8, 53248, 128256, MlpKind::kSwiGlu, false,
     500000},
    {"gpt3-175b", 96, 12288, 96, 96, 49152, 51200, MlpKind::kGelu, true, 10000},
    {"gpt-530b", 105, 20480, 128, 128, 81920, 51200, MlpKind::kGelu, true,
     10000},
    {"tiny", 4, 128, 8, 4, 352, 512, MlpKind::kSwiGlu, false, 10000},
    {"small", 12, 768, 12, 4, 2048, 32000, MlpKind::kSwiGlu, false, 10000},
}};

}  // namespace

absl::string_view MlpKindName(MlpKind kind) {
  return kind == MlpKind::kSwiGlu ? "swiglu" : "gelu";
}

absl::StatusOr<MlpKind> ParseMlpKind(absl::string_view text) {
  if (text == "swiglu") return MlpKind::kSwiGlu;
  if (text == "gelu") return MlpKind::kGelu;
  return absl::InvalidArgumentError(
      absl::StrCat("model.mlp: '", text, "' is not swiglu or gelu"));
}

int64_t ModelConfig::AttentionParamsPerLayer() const {
  return 2 * hidden * hidden + 2 * hidden * kv_dim();
}

int64_t ModelConfig::MlpParamsPerLayer() const {
  const int64_t matrices = mlp == MlpKind::kSwiGlu ? 3 : 2;
  return matrices * hidden * ffn_hidden;
}

int64_t ModelConfig::ParamsPerLayer() const {
  int64_t n = AttentionParamsPerLayer() + MlpParamsPerLayer();
  if (mlp == MlpKind::kSwiGlu) {
    n += 2 * hidden;  // two RMSNorm weights
  } else {
    n += 4 * hidden;                      // two LayerNorms, weight and bias
    n += hidden + 2 * kv_dim() + hidden;  // q, k, v and o biases
    n += ffn_hidden + hidden;             // MLP biases
  }
  return n;
}

int64_t ModelConfig::OutputParams() const {
  const int64_t final_norm = mlp == MlpKind::kSwiGlu ? hidden : 2 * hidden;
  return (tie_embeddings ? 0 : vocab * hidden) + final_norm;
}

int64_t ModelConfig::ParamCount() const {
  return EmbeddingParams() + layers * ParamsPerLayer() + OutputParams();
}

absl::Status ValidateModel(const ModelConfig& m) {
  const std::pair<const char*, int64_t> dims[] = {
      {"layers", m.layers},         {"hidden", m.hidden},
      {"heads", m.heads},           {"kv_heads", m.kv_heads},
      {"ffn_hidden", m.ffn_hidden}, {"vocab", m.vocab}};
  for (const auto& [field, value] : dims) {
    if (value <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model.", field, ": must be a positive integer, got ", value));
    }
  }
  if (m.hidden % m.heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.heads: ", m.heads, " does not divide hidden ", m.hidden));
  }
  if (m.head_dim() % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.heads: head dimension hidden/heads = ", m.head_dim(),
        " must be even for rotary embeddings"));
  }
  if (!(m.rope_theta > 0) || !(m.norm_eps > 0)) {
    return absl::InvalidArgumentError(
        "model.rope_theta / model.norm_eps: must be positive");
  }
  if (m.heads % m.kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.kv_heads: ", m.kv_heads, " does not divide heads ", m.heads));
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelConfig> ModelPreset(absl::string_view name) {
  for (const NamedModel& p : kPresets) {
    if (absl::EqualsIgnoreCase(name, p.name)) {
      ModelConfig m;
      m.name = p.name;
      m.layers = p.layers;
      m.hidden = p.hidden;
      m.heads = p.heads;
      m.kv_heads = p.kv_heads;
      m.ffn_hidden = p.ffn_hidden;
      m.vocab = p.vocab;
      m.mlp = p.mlp;
      m.tie_embeddings = p.tie_embeddings;
      m.rope_theta = p.rope_theta;
      return m;
    }
  }
  return absl::NotFoundError(absl::StrCat(
      "model: ", UnknownNameMessage("preset", name, ModelPresetNames())));
}

std::vector<std::string> ModelPresetNames() {
  std::vector<std::string> names;
  for (const NamedModel& p : kPresets) names.emplace_back(p.name);
  return names;
}

}  // namespace tessera
