#include "core/model_overrides.h"

#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/known_names.h"
#include "core/status_macros.h"

namespace tessera {
namespace {

absl::Status FieldError(absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", message));
}

// Sets *value from `given` when present; bounds [1, max_value].
absl::Status ApplyCount(absl::string_view field,
                        const std::optional<int64_t>& given, int64_t max_value,
                        int64_t* value, bool* changed) {
  if (!given) return absl::OkStatus();
  if (*given < 1 || *given > max_value) {
    return FieldError(field, absl::StrCat("must be an integer in [1, ",
                                          max_value, "], got ", *given));
  }
  if (*value != *given) *changed = true;
  *value = *given;
  return absl::OkStatus();
}

absl::Status ApplyPositive(absl::string_view field,
                           const std::optional<double>& given, double* value,
                           bool* changed) {
  if (!given) return absl::OkStatus();
  if (!std::isfinite(*given) || *given <= 0) {
    return FieldError(field, absl::StrCat("must be a finite positive number, "
                                          "got ",
                                          *given));
  }
  if (*value != *given) *changed = true;
  *value = *given;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ModelConfig> ResolveModel(
    const std::optional<std::string>& preset, const ModelOverrides& o) {
  ModelConfig m;
  m.name = "custom";
  const bool has_preset = preset.has_value() && !preset->empty();
  if (has_preset) {
    absl::StatusOr<ModelConfig> p = ModelPreset(*preset);
    if (!p.ok()) {
      return FieldError("model.preset", UnknownNameMessage("preset", *preset,
                                                           ModelPresetNames()));
    }
    m = *p;
  } else {
    if (!o.any_dimension()) {
      return FieldError(
          "model",
          absl::StrCat("give a preset (",
                       absl::StrJoin(ModelPresetNames(), ", "),
                       ") or layers, hidden, heads, ffn_hidden, vocab"));
    }
    const std::pair<const char*, bool> required[] = {
        {"layers", o.layers.has_value()},
        {"hidden", o.hidden.has_value()},
        {"heads", o.heads.has_value()},
        {"ffn_hidden", o.ffn_hidden.has_value()},
        {"vocab", o.vocab.has_value()}};
    for (const auto& [field, has] : required) {
      if (!has) {
        return FieldError(absl::StrCat("model.", field),
                          "required without a preset");
      }
    }
  }
  bool changed = false;
  TESSERA_RETURN_IF_ERROR(
      ApplyCount("model.layers", o.layers, kMaxLayers, &m.layers, &changed));
  TESSERA_RETURN_IF_ERROR(
      ApplyCount("model.hidden", o.hidden, kMaxHidden, &m.hidden, &changed));
  TESSERA_RETURN_IF_ERROR(
      ApplyCount("model.heads", o.heads, kMaxHidden, &m.heads, &changed));
  if (!has_preset && !o.kv_heads) m.kv_heads = m.heads;
  TESSERA_RETURN_IF_ERROR(ApplyCount("model.kv_heads", o.kv_heads, kMaxHidden,
                                     &m.kv_heads, &changed));
  TESSERA_RETURN_IF_ERROR(ApplyCount("model.ffn_hidden", o.ffn_hidden,
                                     kMaxFfnHidden, &m.ffn_hidden, &changed));
  TESSERA_RETURN_IF_ERROR(
      ApplyCount("model.vocab", o.vocab, kMaxVocab, &m.vocab, &changed));
  if (o.mlp) {
    TESSERA_ASSIGN_OR_RETURN(MlpKind mlp, ParseMlpKind(*o.mlp));
    if (mlp != m.mlp) changed = true;
    m.mlp = mlp;
  }
  if (o.tie_embeddings) {
    if (*o.tie_embeddings != m.tie_embeddings) changed = true;
    m.tie_embeddings = *o.tie_embeddings;
  }
  TESSERA_RETURN_IF_ERROR(
      ApplyPositive("model.rope_theta", o.rope_theta, &m.rope_theta, &changed));
  TESSERA_RETURN_IF_ERROR(
      ApplyPositive("model.norm_eps", o.norm_eps, &m.norm_eps, &changed));
  if (changed || !has_preset) m.name = "custom";
  TESSERA_RETURN_IF_ERROR(ValidateModel(m));
  return m;
}

}  // namespace tessera
