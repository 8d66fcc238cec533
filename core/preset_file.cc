#include "core/preset_file.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace tessera {

absl::Status PresetEntry::Error(absl::string_view field,
                                absl::string_view what) const {
  std::string name;
  if (json != nullptr && json->contains("name") && (*json)["name"].is_string()) {
    name = absl::StrCat(" (", (*json)["name"].get<std::string>(), ")");
  }
  return absl::InvalidArgumentError(absl::StrCat(
      file, ": ", array, "[", index, "]", name, ".", field, ": ", what));
}

bool PresetEntry::Has(const char* field) const { return json->contains(field); }

absl::StatusOr<std::string> PresetEntry::String(const char* field) const {
  if (!Has(field) || !(*json)[field].is_string() ||
      (*json)[field].get<std::string>().empty()) {
    return Error(field, "must be a non-empty string");
  }
  return (*json)[field].get<std::string>();
}

absl::StatusOr<double> PresetEntry::Number(const char* field) const {
  if (!Has(field) || !(*json)[field].is_number() ||
      !std::isfinite((*json)[field].get<double>())) {
    return Error(field, "must be a finite number");
  }
  return (*json)[field].get<double>();
}

absl::StatusOr<int64_t> PresetEntry::Integer(const char* field) const {
  if (!Has(field) || !(*json)[field].is_number_integer()) {
    return Error(field, "must be an integer");
  }
  return (*json)[field].get<int64_t>();
}

absl::StatusOr<bool> PresetEntry::Bool(const char* field) const {
  if (!Has(field) || !(*json)[field].is_boolean()) {
    return Error(field, "must be true or false");
  }
  return (*json)[field].get<bool>();
}

absl::Status PresetEntry::OnlyFields(
    const std::vector<std::string>& known) const {
  for (const auto& [key, value] : json->items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return Error(key, "is not a field of a preset");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<PresetEntry>> ReadPresetFile(
    const std::string& file, absl::string_view text, const std::string& array,
    nlohmann::json* storage) {
  *storage = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (storage->is_discarded() || !storage->is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": not a JSON object"));
  }
  if (!storage->contains(array) || !(*storage)[array].is_array() ||
      (*storage)[array].empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": ", array, ": must be a non-empty array"));
  }
  std::vector<PresetEntry> entries;
  const nlohmann::json& items = (*storage)[array];
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(file, ": ", array, "[", i, "]: must be an object"));
    }
    entries.push_back(PresetEntry{file, array, i, &items[i]});
  }
  return entries;
}

}  // namespace tessera
