// Reading a presets file (core/presets/*.json): an object with a
// "description" and one array of named entries, each an object whose fields
// are all known. The GPU and model presets (gpu.cc, model.cc) are such files,
// compiled into every binary; their readers take fields through these
// helpers so that every error names the file, the entry and the field
// ("gpus.json: gpus[2] (h200-sxm).hbm_gbs: must be a number").
//
//   PresetEntry e{"gpus.json", "gpus", 0, &json_entry};
//   TESSERA_ASSIGN_OR_RETURN(double tdp, e.Number("tdp_w"));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace tessera {

// One entry of a presets file, and its fields with errors that name them.
struct PresetEntry {
  std::string file;
  std::string array;
  size_t index = 0;
  const nlohmann::json* json = nullptr;

  // "file: array[i] (name).field: what".
  absl::Status Error(absl::string_view field, absl::string_view what) const;
  absl::StatusOr<std::string> String(const char* field) const;
  absl::StatusOr<double> Number(const char* field) const;
  absl::StatusOr<int64_t> Integer(const char* field) const;
  absl::StatusOr<bool> Bool(const char* field) const;
  bool Has(const char* field) const;
  // Fails on a field not in `known` (a misspelling would otherwise be a
  // silent default).
  absl::Status OnlyFields(const std::vector<std::string>& known) const;
};

// The entries of `text`'s array `array`, each an object; errors name `file`.
absl::StatusOr<std::vector<PresetEntry>> ReadPresetFile(
    const std::string& file, absl::string_view text, const std::string& array,
    nlohmann::json* storage);

}  // namespace tessera
