#include "costmodel/published/sweep_collectives.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace tessera::costmodel {

absl::StatusOr<std::vector<CollectiveMeasurement>> SweepCollectives(
    const nlohmann::json& file, int64_t gpus_per_node) {
  constexpr char kField[] = "collective_busbw_gbs_256MiB";
  std::vector<CollectiveMeasurement> out;
  if (!file.is_object() || !file.contains(kField)) return out;
  const nlohmann::json& c = file[kField];
  if (!c.is_object() || !c.contains("nodes") || !c["nodes"].is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kField, ": needs a nodes list"));
  }
  const nlohmann::json& nodes = c["nodes"];
  for (const auto& [name, values] : c.items()) {
    if (name == "nodes") continue;
    absl::StatusOr<CollectiveOp> op = ParseCollectiveOp(name);
    if (!op.ok() || !values.is_array() || values.size() != nodes.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(kField, ".", name,
                       ": not a collective with one bus bandwidth per node "
                       "count"));
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (!nodes[i].is_number_integer() || !values[i].is_number() ||
          !(values[i].get<double>() > 0)) {
        return absl::InvalidArgumentError(absl::StrCat(
            kField, ".", name, "[", i, "]: not a positive number"));
      }
      out.push_back(CollectiveMeasurement{*op, nodes[i].get<int64_t>(),
                                          gpus_per_node, kSweepCollectiveBytes,
                                          values[i].get<double>()});
    }
  }
  return out;
}

}  // namespace tessera::costmodel
