#include "core/model.h"


#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/known_names.h"
#include "core/preset_file.h"
#include "core/status_macros.h"
#include "nlohmann/json.hpp"

namespace tessera {
namespace {

struct EmbeddedFile {
  const char* name;
  const char* text;
};
constexpr EmbeddedFile kModelPresetFiles[] = {
#include "models_presets.inc"
};

absl::StatusOr<ModelConfig> ModelOfEntry(const PresetEntry& e) {
  TESSERA_RETURN_IF_ERROR(e.OnlyFields(
      {"name", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab",
       "mlp", "tie_embeddings", "rope_theta", "source"}));
  ModelConfig m;
  TESSERA_ASSIGN_OR_RETURN(m.name, e.String("name"));
  TESSERA_ASSIGN_OR_RETURN(m.layers, e.Integer("layers"));
  TESSERA_ASSIGN_OR_RETURN(m.hidden, e.Integer("hidden"));
  TESSERA_ASSIGN_OR_RETURN(m.heads, e.Integer("heads"));
  TESSERA_ASSIGN_OR_RETURN(m.kv_heads, e.Integer("kv_heads"));
  TESSERA_ASSIGN_OR_RETURN(m.ffn_hidden, e.Integer("ffn_hidden"));
  TESSERA_ASSIGN_OR_RETURN(m.vocab, e.Integer("vocab"));
  TESSERA_ASSIGN_OR_RETURN(const std::string mlp, e.String("mlp"));
  absl::StatusOr<MlpKind> kind = ParseMlpKind(mlp);
  if (!kind.ok()) return e.Error("mlp", absl::StrCat("'", mlp, "' is not swiglu or gelu"));
  m.mlp = *kind;
  TESSERA_ASSIGN_OR_RETURN(m.tie_embeddings, e.Bool("tie_embeddings"));
  TESSERA_ASSIGN_OR_RETURN(m.rope_theta, e.Number("rope_theta"));
  TESSERA_RETURN_IF_ERROR(e.String("source").status());
  if (absl::Status v = ValidateModel(m); !v.ok()) {
    absl::string_view message = v.message();
    absl::ConsumePrefix(&message, "model.");
    return absl::InvalidArgumentError(absl::StrCat(
        e.file, ": ", e.array, "[", e.index, "] (", m.name, ").", message));
  }
  return m;
}

// Parsed once; a file that does not parse keeps its error (the presets test
// parses the shipped file, so a build carries a good one).
const absl::StatusOr<std::vector<ModelConfig>>& Presets() {
  static const auto* presets = new absl::StatusOr<std::vector<ModelConfig>>(
      ParseModelPresets(kModelPresetFiles[0].name, kModelPresetFiles[0].text));
  return *presets;
}

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

absl::StatusOr<std::vector<ModelConfig>> ParseModelPresets(
    const std::string& file, absl::string_view text) {
  nlohmann::json storage;
  TESSERA_ASSIGN_OR_RETURN(const std::vector<PresetEntry> entries,
                           ReadPresetFile(file, text, "models", &storage));
  std::vector<ModelConfig> models;
  for (const PresetEntry& e : entries) {
    TESSERA_ASSIGN_OR_RETURN(ModelConfig m, ModelOfEntry(e));
    for (const ModelConfig& before : models) {
      if (absl::EqualsIgnoreCase(before.name, m.name)) {
        return e.Error("name", absl::StrCat("'", m.name, "' is given twice"));
      }
    }
    models.push_back(std::move(m));
  }
  return models;
}

absl::StatusOr<ModelConfig> ModelPreset(absl::string_view name) {
  if (!Presets().ok()) return Presets().status();
  for (const ModelConfig& m : *Presets()) {
    if (absl::EqualsIgnoreCase(name, m.name)) return m;
  }
  return absl::NotFoundError(absl::StrCat(
      "model: ", UnknownNameMessage("preset", name, ModelPresetNames())));
}

std::vector<std::string> ModelPresetNames() {
  std::vector<std::string> names;
  if (!Presets().ok()) return names;
  for (const ModelConfig& m : *Presets()) names.push_back(m.name);
  return names;
}

}  // namespace tessera
