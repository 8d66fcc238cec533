#include "core/gpu.h"

#include <cmath>

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

constexpr int64_t kMiB = int64_t{1} << 20;

struct EmbeddedFile {
  const char* name;
  const char* text;
};
constexpr EmbeddedFile kGpuPresetFiles[] = {
#include "gpus_presets.inc"
};

absl::StatusOr<GpuSpec> GpuOfEntry(const PresetEntry& e) {
  TESSERA_RETURN_IF_ERROR(e.OnlyFields(
      {"name", "architecture", "peak_dense_tflops", "peak_fp8_tflops",
       "memory_mib", "memory_bytes", "hbm_gbs", "nvlink_gbs",
       "inter_node_gbs", "tdp_w", "idle_w", "source"}));
  GpuSpec g;
  TESSERA_ASSIGN_OR_RETURN(g.name, e.String("name"));
  TESSERA_ASSIGN_OR_RETURN(g.architecture, e.String("architecture"));
  TESSERA_ASSIGN_OR_RETURN(g.peak_dense_tflops, e.Number("peak_dense_tflops"));
  TESSERA_ASSIGN_OR_RETURN(g.peak_fp8_tflops, e.Number("peak_fp8_tflops"));
  if (e.Has("memory_mib") == e.Has("memory_bytes")) {
    return e.Error("memory_mib", "give memory_mib or memory_bytes, not both");
  }
  if (e.Has("memory_mib")) {
    TESSERA_ASSIGN_OR_RETURN(const int64_t mib, e.Integer("memory_mib"));
    g.memory_bytes = mib * kMiB;
  } else {
    TESSERA_ASSIGN_OR_RETURN(g.memory_bytes, e.Integer("memory_bytes"));
  }
  TESSERA_ASSIGN_OR_RETURN(g.hbm_gbs, e.Number("hbm_gbs"));
  TESSERA_ASSIGN_OR_RETURN(g.nvlink_gbs, e.Number("nvlink_gbs"));
  TESSERA_ASSIGN_OR_RETURN(g.inter_node_gbs, e.Number("inter_node_gbs"));
  TESSERA_ASSIGN_OR_RETURN(g.tdp_w, e.Number("tdp_w"));
  TESSERA_ASSIGN_OR_RETURN(g.idle_w, e.Number("idle_w"));
  TESSERA_RETURN_IF_ERROR(e.String("source").status());
  if (absl::Status v = ValidateGpu(g); !v.ok()) {
    absl::string_view message = v.message();
    absl::ConsumePrefix(&message, "gpu.");
    return absl::InvalidArgumentError(absl::StrCat(
        e.file, ": ", e.array, "[", e.index, "] (", g.name, ").", message));
  }
  return g;
}

// Parsed once; a file that does not parse keeps its error (the presets test
// parses the shipped file, so a build carries a good one).
const absl::StatusOr<std::vector<GpuSpec>>& Presets() {
  static const auto* presets = new absl::StatusOr<std::vector<GpuSpec>>(
      ParseGpuPresets(kGpuPresetFiles[0].name, kGpuPresetFiles[0].text));
  return *presets;
}

}  // namespace

const std::vector<std::string>& KnownArchitectures() {
  static const std::vector<std::string>* names = new std::vector<std::string>{
      "volta", "ampere", "hopper", "blackwell", "cpu"};
  return *names;
}

bool IsKnownArchitecture(absl::string_view architecture) {
  if (architecture.empty()) return true;
  for (const std::string& name : KnownArchitectures()) {
    if (architecture == name) return true;
  }
  return false;
}

absl::Status ValidateGpu(const GpuSpec& g) {
  const std::pair<const char*, double> figures[] = {
      {"peak_dense_tflops", g.peak_dense_tflops},
      {"memory_bytes", static_cast<double>(g.memory_bytes)},
      {"hbm_gbs", g.hbm_gbs},
      {"nvlink_gbs", g.nvlink_gbs},
      {"inter_node_gbs", g.inter_node_gbs},
      {"tdp_w", g.tdp_w}};
  for (const auto& [field, value] : figures) {
    if (!(value > 0) || !std::isfinite(value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gpu.", field, ": must be positive and finite, got ", value));
    }
  }
  if (!IsKnownArchitecture(g.architecture)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gpu.architecture: '", g.architecture, "' is not one of ",
        absl::StrJoin(KnownArchitectures(), ", "), " or empty (unknown)"));
  }
  if (!(g.peak_fp8_tflops >= 0) || !std::isfinite(g.peak_fp8_tflops)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpu.peak_fp8_tflops: must be zero (no fp8) or positive "
                     "and finite, got ",
                     g.peak_fp8_tflops));
  }
  if (!(g.idle_w >= 0 && g.idle_w < g.tdp_w) || !std::isfinite(g.idle_w)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gpu.idle_w: must be in [0, tdp_w=", g.tdp_w, "), got ", g.idle_w));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<GpuSpec>> ParseGpuPresets(const std::string& file,
                                                     absl::string_view text) {
  nlohmann::json storage;
  TESSERA_ASSIGN_OR_RETURN(const std::vector<PresetEntry> entries,
                           ReadPresetFile(file, text, "gpus", &storage));
  std::vector<GpuSpec> gpus;
  for (const PresetEntry& e : entries) {
    TESSERA_ASSIGN_OR_RETURN(GpuSpec g, GpuOfEntry(e));
    for (const GpuSpec& before : gpus) {
      if (absl::EqualsIgnoreCase(before.name, g.name)) {
        return e.Error("name", absl::StrCat("'", g.name, "' is given twice"));
      }
    }
    gpus.push_back(std::move(g));
  }
  return gpus;
}

absl::StatusOr<GpuSpec> GpuPreset(absl::string_view name) {
  if (!Presets().ok()) return Presets().status();
  for (const GpuSpec& g : *Presets()) {
    if (absl::EqualsIgnoreCase(name, g.name)) return g;
  }
  return absl::NotFoundError(absl::StrCat(
      "gpu: ", UnknownNameMessage("preset", name, GpuPresetNames())));
}

std::vector<std::string> GpuPresetNames() {
  std::vector<std::string> names;
  if (!Presets().ok()) return names;
  for (const GpuSpec& g : *Presets()) names.push_back(g.name);
  return names;
}

}  // namespace tessera
