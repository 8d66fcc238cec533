// The cluster's measured bus bandwidth as a layout sweep file gives it
// (shared/data/usp_sweep.json's `collective_busbw_gbs_256MiB`: a `nodes`
// list and, per collective, one bus bandwidth in GB/s per node count,
// measured at 256 MiB), as the measurements `tessera calibrate --collectives`
// takes. Read by the sweep's validation (layout_sweep.h) and by `tessera
// replay` (replay/measured_sweep.h) alike.
//
//   TESSERA_ASSIGN_OR_RETURN(std::vector<CollectiveMeasurement> m,
//                            SweepCollectives(file, /*gpus_per_node=*/8));
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "costmodel/calibration/measured_collectives.h"

namespace tessera::costmodel {

// The size the sweep's bus bandwidths were measured at.
inline constexpr double kSweepCollectiveBytes = 256.0 * 1024 * 1024;

// The file's measurements (none when it has no such block), each on nodes of
// `gpus_per_node`. INVALID_ARGUMENT naming the field: no nodes list, a name
// that is not a collective, a list of another length than nodes, a value
// that is not a positive number.
absl::StatusOr<std::vector<CollectiveMeasurement>> SweepCollectives(
    const nlohmann::json& file, int64_t gpus_per_node);

}  // namespace tessera::costmodel
