#include "costmodel/stacks/training_stack.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "nlohmann/json.hpp"
#include "costmodel/calibration/calibration.h"

namespace tessera::costmodel {
namespace {

using Json = nlohmann::json;

constexpr const char* kSavedTensorNames[] = {
    "layer_input", "attn_norm_out", "q",        "k",           "v",
    "attn_out",    "attn_scores",   "attn_residual", "mlp_norm_out",
    "mlp_gate",    "mlp_up",        "mlp_act",  "mlp_down_in", "mlp_out",
    "dropout_masks"};
static_assert(std::size(kSavedTensorNames) ==
              static_cast<size_t>(SavedTensor::kCount));

constexpr const char* kLayerGemmNames[] = {"q",        "k",      "v",       "out",
                                           "mlp_gate", "mlp_up", "mlp_down"};
static_assert(std::size(kLayerGemmNames) ==
              static_cast<size_t>(LayerGemm::kCount));

// Reads one stack file, naming `file: path` in every error.
class StackReader {
 public:
  explicit StackReader(absl::string_view file) : file_(file) {}

  absl::Status Error(absl::string_view path, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(file_, ": ", path, ": ", what));
  }

  // Fails on a key of `object` that is not in `allowed`.
  absl::Status OnlyKeys(const Json& object, absl::string_view path,
                        std::initializer_list<const char*> allowed) const {
    if (!object.is_object()) return Error(path, "must be an object");
    for (const auto& [key, value] : object.items()) {
      // Bound by name: clang before 16 cannot capture a structured binding.
      if (std::none_of(allowed.begin(), allowed.end(),
                       [&name = key](const char* a) { return name == a; })) {
        return Error(path.empty() ? key : absl::StrCat(path, ".", key),
                     absl::StrCat("unknown field (known: ",
                                  absl::StrJoin(allowed, ", "), ")"));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> String(const Json& o, const char* key,
                                     absl::string_view path) const {
    if (!o.contains(key) || !o[key].is_string()) {
      return Error(Path(path, key), "required: a string");
    }
    return o[key].get<std::string>();
  }

  absl::StatusOr<bool> Bool(const Json& o, const char* key,
                            absl::string_view path, bool fallback) const {
    if (!o.contains(key)) return fallback;
    if (!o[key].is_boolean()) return Error(Path(path, key), "must be true or false");
    return o[key].get<bool>();
  }

  absl::StatusOr<double> Number(const Json& o, const char* key,
                                absl::string_view path, double fallback,
                                double min_value, double max_value) const {
    if (!o.contains(key)) return fallback;
    if (!o[key].is_number()) return Error(Path(path, key), "must be a number");
    const double v = o[key].get<double>();
    if (!std::isfinite(v) || v < min_value || v > max_value) {
      return Error(Path(path, key), absl::StrCat(v, " is outside [", min_value,
                                                 ", ", max_value, "]"));
    }
    return v;
  }

  // A list of names, each mapped through `parse`.
  template <typename T, typename Parse>
  absl::StatusOr<std::vector<T>> List(const Json& o, const char* key,
                                      absl::string_view path,
                                      Parse parse) const {
    const std::string p = Path(path, key);
    if (!o.contains(key) || !o[key].is_array()) {
      return Error(p, "required: a list");
    }
    std::vector<T> out;
    for (size_t i = 0; i < o[key].size(); ++i) {
      const std::string item = absl::StrCat(p, "[", i, "]");
      if (!o[key][i].is_string() && !o[key][i].is_number_integer()) {
        return Error(item, "must be a name");
      }
      absl::StatusOr<T> v = parse(o[key][i], item);
      if (!v.ok()) return v.status();
      if (std::find(out.begin(), out.end(), *v) != out.end()) {
        return Error(item, "named twice");
      }
      out.push_back(*v);
    }
    return out;
  }

  absl::StatusOr<SavedTensor> Tensor(const Json& v, absl::string_view path) const {
    if (v.is_string()) {
      for (size_t i = 0; i < std::size(kSavedTensorNames); ++i) {
        if (v.get<std::string>() == kSavedTensorNames[i]) {
          return static_cast<SavedTensor>(i);
        }
      }
    }
    return Error(path, absl::StrCat("'", v.dump(), "' is not a saved tensor (",
                                    absl::StrJoin(kSavedTensorNames, ", "), ")"));
  }

  absl::StatusOr<LayerGemm> Gemm(const Json& v, absl::string_view path) const {
    if (v.is_string()) {
      for (size_t i = 0; i < std::size(kLayerGemmNames); ++i) {
        if (v.get<std::string>() == kLayerGemmNames[i]) {
          return static_cast<LayerGemm>(i);
        }
      }
    }
    return Error(path, absl::StrCat("'", v.dump(), "' is not a layer GEMM (",
                                    absl::StrJoin(kLayerGemmNames, ", "), ")"));
  }

  // {"coefficient": value, ...}, each a known coefficient within its range.
  absl::StatusOr<std::map<std::string, double>> Coefficients(
      const Json& o, absl::string_view path) const {
    if (!o.is_object()) return Error(path, "must be an object");
    std::map<std::string, double> out;
    Calibration probe;
    for (const auto& [name, value] : o.items()) {
      const std::string p = Path(path, name);
      if (!value.is_number()) return Error(p, "must be a number");
      absl::Status s = probe.Set(name, value.get<double>());
      if (!s.ok()) return Error(p, s.message());
      out[name] = value.get<double>();
    }
    return out;
  }

  static std::string Path(absl::string_view path, absl::string_view key) {
    return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
  }

 private:
  std::string file_;
};

// A List() item parser from core's parser of a name, with the error saying
// what the name may be.
template <typename T>
auto ByName(const StackReader& r,
            absl::StatusOr<T> (*parse)(absl::string_view),
            const char* expected) {
  return [&r, parse, expected](const Json& v,
                               absl::string_view at) -> absl::StatusOr<T> {
    absl::StatusOr<T> value = v.is_string()
                                  ? parse(v.get<std::string>())
                                  : absl::InvalidArgumentError("not a name");
    if (!value.ok()) {
      return r.Error(at, absl::StrCat(v.dump(), " is not ", expected));
    }
    return value;
  };
}

absl::StatusOr<StackLayouts> ReadLayouts(const StackReader& r, const Json& o) {
  const std::string p = "layouts";
  TESSERA_RETURN_IF_ERROR(r.OnlyKeys(
      o, p,
      {"tensor_parallel", "sequence_parallel", "pipeline_parallel",
       "interleaved_pipeline", "uneven_interleaving", "context_parallel",
       "zero_stages", "max_zero_with_pipeline", "hsdp", "recompute",
       "precisions"}));
  StackLayouts l;
  TESSERA_ASSIGN_OR_RETURN(l.tensor_parallel,
                           r.Bool(o, "tensor_parallel", p, true));
  TESSERA_ASSIGN_OR_RETURN(std::string sp,
                           r.String(o, "sequence_parallel", p));
  if (sp == "optional") {
    l.sequence_parallel = SequenceParallel::kOptional;
  } else if (sp == "always") {
    l.sequence_parallel = SequenceParallel::kAlways;
  } else if (sp == "never") {
    l.sequence_parallel = SequenceParallel::kNever;
  } else {
    return r.Error("layouts.sequence_parallel",
                   absl::StrCat("'", sp, "' is not optional, always or never"));
  }
  TESSERA_ASSIGN_OR_RETURN(l.pipeline_parallel,
                           r.Bool(o, "pipeline_parallel", p, true));
  TESSERA_ASSIGN_OR_RETURN(l.interleaved_pipeline,
                           r.Bool(o, "interleaved_pipeline", p, true));
  TESSERA_ASSIGN_OR_RETURN(l.uneven_interleaving,
                           r.Bool(o, "uneven_interleaving", p, true));
  TESSERA_ASSIGN_OR_RETURN(l.context_parallel,
                           r.Bool(o, "context_parallel", p, true));
  TESSERA_ASSIGN_OR_RETURN(l.hsdp, r.Bool(o, "hsdp", p, true));
  TESSERA_ASSIGN_OR_RETURN(double max_zero,
                           r.Number(o, "max_zero_with_pipeline", p, 3, 0, 3));
  if (max_zero != static_cast<int64_t>(max_zero)) {
    return r.Error("layouts.max_zero_with_pipeline", "must be 0, 1, 2 or 3");
  }
  l.max_zero_with_pipeline = static_cast<int64_t>(max_zero);
  TESSERA_ASSIGN_OR_RETURN(
      l.zero_stages,
      r.List<int64_t>(o, "zero_stages", p,
                      [&](const Json& v,
                          absl::string_view at) -> absl::StatusOr<int64_t> {
                        if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
                            v.get<int64_t>() > 3) {
                          return r.Error(at, absl::StrCat(v.dump(),
                                                          " is not a ZeRO "
                                                          "stage (0-3)"));
                        }
                        return v.get<int64_t>();
                      }));
  TESSERA_ASSIGN_OR_RETURN(
      l.recompute,
      r.List<Recompute>(o, "recompute", p,
                        ByName(r, &ParseRecompute, "none, selective or full")));
  TESSERA_ASSIGN_OR_RETURN(
      l.precisions,
      r.List<Precision>(o, "precisions", p,
                        ByName(r, &ParsePrecision, "bf16 or fp8")));
  if (l.zero_stages.empty()) return r.Error("layouts.zero_stages", "empty");
  if (l.recompute.empty()) return r.Error("layouts.recompute", "empty");
  if (l.precisions.empty()) return r.Error("layouts.precisions", "empty");
  if (l.interleaved_pipeline && !l.pipeline_parallel) {
    return r.Error("layouts.interleaved_pipeline",
                   "needs pipeline_parallel");
  }
  return l;
}

absl::StatusOr<SelectiveRecompute> ReadSelective(const StackReader& r,
                                                 const Json& o,
                                                 const std::string& p) {
  TESSERA_RETURN_IF_ERROR(r.OnlyKeys(
      o, p,
      {"description", "saved", "recomputed_gemms", "recomputes_attention_core",
       "recomputes_elementwise", "full_recompute_layer_fraction"}));
  SelectiveRecompute s;
  TESSERA_ASSIGN_OR_RETURN(s.description, r.String(o, "description", p));
  auto tensor = [&](const Json& v, absl::string_view at) {
    return r.Tensor(v, at);
  };
  auto gemm = [&](const Json& v, absl::string_view at) { return r.Gemm(v, at); };
  TESSERA_ASSIGN_OR_RETURN(s.saved, r.List<SavedTensor>(o, "saved", p, tensor));
  TESSERA_ASSIGN_OR_RETURN(
      s.recomputed_gemms, r.List<LayerGemm>(o, "recomputed_gemms", p, gemm));
  TESSERA_ASSIGN_OR_RETURN(s.recomputes_attention_core,
                           r.Bool(o, "recomputes_attention_core", p, false));
  TESSERA_ASSIGN_OR_RETURN(s.recomputes_elementwise,
                           r.Bool(o, "recomputes_elementwise", p, false));
  TESSERA_ASSIGN_OR_RETURN(
      s.full_recompute_layer_fraction,
      r.Number(o, "full_recompute_layer_fraction", p, 0, 0, 1));
  return s;
}

absl::StatusOr<ModelStateBytes> ReadModelStates(const StackReader& r,
                                                const Json& m,
                                                const std::string& mp) {
  TESSERA_RETURN_IF_ERROR(r.OnlyKeys(
      m, mp,
      {"weights", "master_weights", "gradients", "optimizer", "fp8_weights"}));
  ModelStateBytes b;
  TESSERA_ASSIGN_OR_RETURN(b.weights, r.Number(m, "weights", mp, 2, 0, 8));
  TESSERA_ASSIGN_OR_RETURN(b.master_weights,
                           r.Number(m, "master_weights", mp, 4, 0, 8));
  TESSERA_ASSIGN_OR_RETURN(b.gradients, r.Number(m, "gradients", mp, 4, 0, 8));
  TESSERA_ASSIGN_OR_RETURN(b.optimizer, r.Number(m, "optimizer", mp, 8, 0, 16));
  TESSERA_ASSIGN_OR_RETURN(b.fp8_weights,
                           r.Number(m, "fp8_weights", mp, 0, 0, 4));
  if (b.weights + b.master_weights <= 0) {
    return r.Error(mp, "a parameter must be held somewhere: weights or "
                       "master_weights must be positive");
  }
  return b;
}

absl::StatusOr<CommBytes> ReadCommBytes(const StackReader& r, const Json& c,
                                        const std::string& p) {
  TESSERA_RETURN_IF_ERROR(
      r.OnlyKeys(c, p, {"parameter_gather", "gradient_reduce"}));
  CommBytes b;
  TESSERA_ASSIGN_OR_RETURN(b.parameter_gather,
                           r.Number(c, "parameter_gather", p, 2, 0.5, 4));
  TESSERA_ASSIGN_OR_RETURN(b.gradient_reduce,
                           r.Number(c, "gradient_reduce", p, 4, 1, 4));
  return b;
}

absl::StatusOr<PipelineSplit> ReadPipelineSplit(const StackReader& r,
                                               const Json& o,
                                               const std::string& p) {
  TESSERA_ASSIGN_OR_RETURN(std::string split, r.String(o, "pipeline_split", p));
  if (split == "even") return PipelineSplit::kEven;
  if (split == "embedding_and_loss_as_layers") {
    return PipelineSplit::kEmbeddingAndLossAsLayers;
  }
  if (split == "cumulative_cost") return PipelineSplit::kCumulativeCost;
  return r.Error(StackReader::Path(p, "pipeline_split"),
                 absl::StrCat("'", split,
                              "' is not even, embedding_and_loss_as_layers "
                              "or cumulative_cost"));
}

absl::StatusOr<StackOption> ReadOption(const StackReader& r, const Json& o,
                                       const std::string& p) {
  TESSERA_RETURN_IF_ERROR(r.OnlyKeys(
      o, p,
      {"name", "description", "default", "coefficients", "selective_recompute",
       "comm_bytes", "model_states", "pipeline_split"}));
  StackOption opt;
  TESSERA_ASSIGN_OR_RETURN(opt.name, r.String(o, "name", p));
  if (opt.name.empty() || absl::StartsWith(opt.name, "no-") ||
      opt.name.find_first_of(", =") != std::string::npos) {
    return r.Error(StackReader::Path(p, "name"),
                   absl::StrCat("'", opt.name,
                                "' must be a non-empty word without a 'no-' "
                                "prefix, commas or spaces"));
  }
  TESSERA_ASSIGN_OR_RETURN(opt.description, r.String(o, "description", p));
  TESSERA_ASSIGN_OR_RETURN(opt.default_on, r.Bool(o, "default", p, false));
  if (o.contains("coefficients")) {
    TESSERA_ASSIGN_OR_RETURN(
        opt.coefficients,
        r.Coefficients(o["coefficients"], StackReader::Path(p, "coefficients")));
  }
  if (o.contains("selective_recompute")) {
    TESSERA_ASSIGN_OR_RETURN(
        opt.selective,
        ReadSelective(r, o["selective_recompute"],
                      StackReader::Path(p, "selective_recompute")));
  }
  // Only the fields given change; each is checked as the stack's own.
  if (o.contains("comm_bytes")) {
    const std::string cp = StackReader::Path(p, "comm_bytes");
    TESSERA_RETURN_IF_ERROR(ReadCommBytes(r, o["comm_bytes"], cp).status());
    for (const auto& [k, v] : o["comm_bytes"].items()) {
      opt.comm_bytes[k] = v.get<double>();
    }
  }
  if (o.contains("pipeline_split")) {
    TESSERA_ASSIGN_OR_RETURN(opt.pipeline_split, ReadPipelineSplit(r, o, p));
  }
  if (o.contains("model_states")) {
    const std::string mp = StackReader::Path(p, "model_states");
    Json full = {{"weights", 2}, {"master_weights", 4}};
    full.update(o["model_states"]);
    TESSERA_RETURN_IF_ERROR(ReadModelStates(r, full, mp).status());
    for (const auto& [k, v] : o["model_states"].items()) {
      opt.model_states[k] = v.get<double>();
    }
  }
  return opt;
}

}  // namespace

absl::string_view SavedTensorName(SavedTensor tensor) {
  return kSavedTensorNames[static_cast<int>(tensor)];
}

absl::string_view LayerGemmName(LayerGemm gemm) {
  return kLayerGemmNames[static_cast<int>(gemm)];
}

absl::StatusOr<TrainingStack> ParseStack(absl::string_view file_name,
                                         absl::string_view json_text) {
  const StackReader r(file_name);
  Json o = Json::parse(json_text, nullptr, /*allow_exceptions=*/false,
                       /*ignore_comments=*/false);
  if (o.is_discarded()) return r.Error("(file)", "is not valid JSON");
  TESSERA_RETURN_IF_ERROR(r.OnlyKeys(
      o, "",
      {"name", "description", "source", "layouts", "attention", "saved",
       "selective_recompute", "fp8_saves_linear_inputs", "fsdp",
       "pipeline_split", "model_states", "comm_bytes", "coefficients",
       "coefficients_by_architecture", "coefficient_sources", "options"}));
  TrainingStack s;
  TESSERA_ASSIGN_OR_RETURN(s.name, r.String(o, "name", ""));
  TESSERA_ASSIGN_OR_RETURN(s.description, r.String(o, "description", ""));
  TESSERA_ASSIGN_OR_RETURN(s.source, r.String(o, "source", ""));
  if (!o.contains("layouts")) return r.Error("layouts", "required");
  TESSERA_ASSIGN_OR_RETURN(s.layouts, ReadLayouts(r, o["layouts"]));

  TESSERA_ASSIGN_OR_RETURN(std::string attention, r.String(o, "attention", ""));
  if (attention == "flash") {
    s.attention = AttentionKernel::kFlash;
  } else if (attention == "materialized") {
    s.attention = AttentionKernel::kMaterialized;
  } else {
    return r.Error("attention",
                   absl::StrCat("'", attention, "' is not flash or materialized"));
  }
  TESSERA_ASSIGN_OR_RETURN(s.saved,
                           r.List<SavedTensor>(o, "saved", "",
                                               [&](const Json& v,
                                                   absl::string_view at) {
                                                 return r.Tensor(v, at);
                                               }));
  const bool keeps_scores =
      std::find(s.saved.begin(), s.saved.end(), SavedTensor::kAttnScores) !=
      s.saved.end();
  if (keeps_scores != (s.attention == AttentionKernel::kMaterialized)) {
    return r.Error("saved", "attn_scores is kept exactly when the attention "
                            "is materialized");
  }
  if (!o.contains("selective_recompute")) {
    return r.Error("selective_recompute", "required");
  }
  TESSERA_ASSIGN_OR_RETURN(
      s.selective,
      ReadSelective(r, o["selective_recompute"], "selective_recompute"));
  TESSERA_ASSIGN_OR_RETURN(s.fp8_saves_linear_inputs,
                           r.Bool(o, "fp8_saves_linear_inputs", "", false));

  if (!o.contains("fsdp")) return r.Error("fsdp", "required");
  const Json& f = o["fsdp"];
  TESSERA_RETURN_IF_ERROR(
      r.OnlyKeys(f, "fsdp",
                 {"reshard_after_forward", "keeps_gathered_across_pipeline_micro_batches",
                  "zero2_replicates_parameters",
                  "zero_gathers_parameters_in_optimizer_step"}));
  TESSERA_ASSIGN_OR_RETURN(s.fsdp.reshard_after_forward,
                           r.Bool(f, "reshard_after_forward", "fsdp", true));
  TESSERA_ASSIGN_OR_RETURN(
      s.fsdp.keeps_gathered_across_pipeline_micro_batches,
      r.Bool(f, "keeps_gathered_across_pipeline_micro_batches", "fsdp", false));
  TESSERA_ASSIGN_OR_RETURN(
      s.fsdp.zero2_replicates_parameters,
      r.Bool(f, "zero2_replicates_parameters", "fsdp", true));
  TESSERA_ASSIGN_OR_RETURN(
      s.fsdp.zero_gathers_parameters_in_optimizer_step,
      r.Bool(f, "zero_gathers_parameters_in_optimizer_step", "fsdp", false));

  if (o.contains("pipeline_split")) {
    TESSERA_ASSIGN_OR_RETURN(s.pipeline_split, ReadPipelineSplit(r, o, ""));
  }
  if (!o.contains("model_states")) return r.Error("model_states", "required");
  TESSERA_ASSIGN_OR_RETURN(s.model_states,
                           ReadModelStates(r, o["model_states"], "model_states"));

  if (o.contains("comm_bytes")) {
    TESSERA_ASSIGN_OR_RETURN(s.comm_bytes,
                             ReadCommBytes(r, o["comm_bytes"], "comm_bytes"));
  }

  if (o.contains("coefficients")) {
    TESSERA_ASSIGN_OR_RETURN(s.coefficients,
                             r.Coefficients(o["coefficients"], "coefficients"));
  }
  if (o.contains("coefficients_by_architecture")) {
    const Json& by = o["coefficients_by_architecture"];
    if (!by.is_object()) {
      return r.Error("coefficients_by_architecture", "must be an object");
    }
    for (const auto& [arch, values] : by.items()) {
      const std::string p =
          absl::StrCat("coefficients_by_architecture.", arch);
      if (arch.empty() || !IsKnownArchitecture(arch)) {
        return r.Error(p, absl::StrCat("unknown architecture (known: ",
                                       absl::StrJoin(KnownArchitectures(), ", "),
                                       ")"));
      }
      TESSERA_ASSIGN_OR_RETURN(s.coefficients_by_architecture[arch],
                               r.Coefficients(values, p));
    }
  }
  if (o.contains("coefficient_sources")) {
    const Json& src = o["coefficient_sources"];
    if (!src.is_array()) return r.Error("coefficient_sources", "must be a list");
    for (size_t i = 0; i < src.size(); ++i) {
      if (!src[i].is_string()) {
        return r.Error(absl::StrCat("coefficient_sources[", i, "]"),
                       "must be a string");
      }
      s.coefficient_sources.push_back(src[i].get<std::string>());
    }
  }
  if (o.contains("options")) {
    if (!o["options"].is_array()) return r.Error("options", "must be a list");
    for (size_t i = 0; i < o["options"].size(); ++i) {
      const std::string p = absl::StrCat("options[", i, "]");
      TESSERA_ASSIGN_OR_RETURN(StackOption opt,
                               ReadOption(r, o["options"][i], p));
      if (s.FindOption(opt.name) != nullptr) {
        return r.Error(p, absl::StrCat("option '", opt.name, "' named twice"));
      }
      s.options.push_back(std::move(opt));
    }
  }
  const std::string expected_file = absl::StrCat(s.name, ".json");
  if (file_name != expected_file &&
      !absl::EndsWith(file_name, absl::StrCat("/", expected_file))) {
    return r.Error("name", absl::StrCat("'", s.name, "' must match the file "
                                        "name (", expected_file, ")"));
  }
  return s;
}

bool TrainingStack::SupportsZeroStage(int64_t zero) const {
  return std::find(layouts.zero_stages.begin(), layouts.zero_stages.end(),
                   zero) != layouts.zero_stages.end();
}

bool TrainingStack::SupportsRecompute(Recompute r) const {
  return std::find(layouts.recompute.begin(), layouts.recompute.end(), r) !=
         layouts.recompute.end();
}

bool TrainingStack::SupportsPrecision(Precision p) const {
  return std::find(layouts.precisions.begin(), layouts.precisions.end(), p) !=
         layouts.precisions.end();
}

const StackOption* TrainingStack::FindOption(absl::string_view option) const {
  for (const StackOption& o : options) {
    if (o.name == option) return &o;
  }
  return nullptr;
}

absl::Status TrainingStack::CanRun(const Layout& l, Precision precision) const {
  auto no = [&](absl::string_view field, absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": the ", name, " stack ", what));
  };
  if (!SupportsPrecision(precision)) {
    return no("training.precision",
              absl::StrCat("does not train in ", PrecisionName(precision)));
  }
  if (l.tp > 1 && !layouts.tensor_parallel) {
    return no("layout.tp", "has no tensor parallelism (tp must be 1)");
  }
  if (l.sp && layouts.sequence_parallel == SequenceParallel::kNever) {
    return no("layout.sp", "has no sequence parallelism (sp must be 0)");
  }
  if (!l.sp && l.tp > 1 &&
      layouts.sequence_parallel == SequenceParallel::kAlways) {
    return no("layout.sp",
              "always runs sequence parallelism with tensor parallelism "
              "(sp must be 1 when tp > 1)");
  }
  if (l.pp > 1 && !layouts.pipeline_parallel) {
    return no("layout.pp", "has no pipeline parallelism (pp must be 1)");
  }
  if (l.vpp > 1 && !layouts.interleaved_pipeline) {
    return no("layout.vpp", "has no interleaved pipeline schedule (vpp must "
                            "be 1)");
  }
  if (l.cp > 1 && !layouts.context_parallel) {
    return no("layout.cp", "has no context parallelism (cp must be 1)");
  }
  if (!SupportsZeroStage(l.zero)) {
    std::vector<std::string> stages;
    for (int64_t z : layouts.zero_stages) stages.push_back(absl::StrCat(z));
    return no("layout.zero", absl::StrCat("runs zero ",
                                          absl::StrJoin(stages, ", "),
                                          ", not ", l.zero));
  }
  if (l.pp > 1 && l.zero > layouts.max_zero_with_pipeline) {
    return no("layout.zero",
              absl::StrCat("runs pipeline parallelism only with zero <= ",
                           layouts.max_zero_with_pipeline));
  }
  if (l.zero >= 1 && l.shard_group > 0 && l.shard_group < l.dp &&
      !layouts.hsdp) {
    return no("layout.shard_group",
              "has no hybrid sharding (HSDP): shard_group must be dp");
  }
  if (!SupportsRecompute(l.recompute)) {
    return no("layout.recompute",
              absl::StrCat("has no '", RecomputeName(l.recompute),
                           "' recomputation"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<const StackOption*>> EnabledOptions(
    const TrainingStack& stack, const std::vector<std::string>& changes) {
  std::map<std::string, bool> on;
  for (const StackOption& o : stack.options) on[o.name] = o.default_on;
  std::set<std::string> seen;
  for (const std::string& change : changes) {
    const bool off = absl::StartsWith(change, "no-");
    const std::string option = off ? change.substr(3) : change;
    if (stack.FindOption(option) == nullptr) {
      std::vector<std::string> known;
      for (const StackOption& o : stack.options) known.push_back(o.name);
      return absl::InvalidArgumentError(absl::StrCat(
          "training.stack_options: the ", stack.name, " stack has no option '",
          option, "' (its options: ",
          known.empty() ? "none" : absl::StrJoin(known, ", "), ")"));
    }
    if (!seen.insert(option).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "training.stack_options: '", option, "' is set twice"));
    }
    on[option] = !off;
  }
  std::vector<const StackOption*> enabled;
  for (const StackOption& o : stack.options) {
    if (on[o.name]) enabled.push_back(&o);
  }
  return enabled;
}

absl::StatusOr<TrainingStack> StackForTraining(const TrainingConfig& t) {
  TESSERA_ASSIGN_OR_RETURN(const TrainingStack* stack, FindStack(t.stack));
  TESSERA_ASSIGN_OR_RETURN(std::vector<const StackOption*> options,
                           EnabledOptions(*stack, t.stack_options));
  TrainingStack s = *stack;
  for (const StackOption* o : options) {
    if (o->selective.has_value()) s.selective = *o->selective;
    if (o->pipeline_split.has_value()) s.pipeline_split = *o->pipeline_split;
    for (const auto& [field, value] : o->comm_bytes) {
      if (field == "parameter_gather") s.comm_bytes.parameter_gather = value;
      if (field == "gradient_reduce") s.comm_bytes.gradient_reduce = value;
    }
    for (const auto& [field, value] : o->model_states) {
      if (field == "weights") s.model_states.weights = value;
      if (field == "master_weights") s.model_states.master_weights = value;
      if (field == "gradients") s.model_states.gradients = value;
      if (field == "optimizer") s.model_states.optimizer = value;
      if (field == "fp8_weights") s.model_states.fp8_weights = value;
    }
  }
  return s;
}

absl::Status ResolveTrainingStack(TrainingConfig& training) {
  TESSERA_ASSIGN_OR_RETURN(const TrainingStack* stack,
                           FindStack(training.stack));
  TESSERA_RETURN_IF_ERROR(
      EnabledOptions(*stack, training.stack_options).status());
  if (!stack->SupportsPrecision(training.precision)) {
    return absl::InvalidArgumentError(
        absl::StrCat("training.precision: the ", stack->name,
                     " stack does not train in ",
                     PrecisionName(training.precision)));
  }
  training.stack = stack->name;
  return absl::OkStatus();
}

}  // namespace tessera::costmodel
