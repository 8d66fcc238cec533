// The JSON form of a Layout, shared by `tessera plan --json`, `tessera-trial`'s
// result and the agents: {"tp": 2, "sp": true, "pp": 1, "vpp": 1, "cp": 1,
// "dp": 8, "zero": 3, "shard_group": 8, "micro_batch": 2, "grad_accum": 4,
// "recompute": "none"}.
#pragma once

#include "absl/status/statusor.h"
#include "core/layout.h"
#include "nlohmann/json.hpp"

namespace tessera {

nlohmann::json LayoutToJson(const Layout& layout);

// Reads the object LayoutToJson writes. Omitted fields keep their defaults;
// unknown fields and wrong types are errors that name the field.
absl::StatusOr<Layout> LayoutFromJson(const nlohmann::json& json);

}  // namespace tessera
