// The "agents" GPU preset (specs.proto GpuSpec): a study that plans for the
// machines its agents run on describes one rank of an agent as its "GPU",
// from the agent's registration and probes:
//   peak_dense_tflops  the GEMM probe: gemm_f32 measures the whole host, so
//                      per rank it is divided by the agent's ranks; other
//                      gemm_* kinds are per GPU;
//   hbm_gbs            the memcpy probe (one thread's copy bandwidth: what
//                      one rank streams);
//   nvlink_gbs         the memcpy probe (ranks of one agent exchange data by
//                      copies inside the process);
//   inter_node_gbs     the bus bandwidth of the allreduce probe of the largest
//                      group (largest message): there is no TCP probe yet, so
//                      the in-process collective stands in for the link
//                      between agents (the memcpy rate when the agent has a
//                      single rank and no collective probe);
//   memory_bytes       the agent's memory per rank;
//   tdp_w, idle_w      CPU power is not measured: a nominal 10 W per rank and
//                      0 W idle, so that predicted tokens/J only compare
//                      layouts with each other (always labelled PREDICTED).
// Figures the study's spec gives explicitly override these.
//
//   TESSERA_ASSIGN_OR_RETURN(v1::GpuSpec gpu,
//       GpuSpecFromAgent(agent, probes, spec.cluster().gpu()));
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "db/trial_store.h"
#include "tessera/v1/specs.pb.h"

namespace tessera::service {

// The preset name.
inline constexpr char kAgentsGpuPreset[] = "agents";

// Nominal CPU power per rank (see above).
inline constexpr double kNominalCpuRankTdpW = 10;

// The GpuSpec of `agent` (every figure explicit, no preset) from its
// `probes` (newest wins per kind), with the figures set in `overrides` (the
// study's cluster.gpu) over them. FAILED_PRECONDITION when the agent has no
// GEMM or memcpy probe or reports no memory.
absl::StatusOr<v1::GpuSpec> GpuSpecFromAgent(
    const db::Agent& agent, const std::vector<db::Probe>& probes,
    const v1::GpuSpec& overrides);

// The name the resolved GPU goes by (calibration scope, recommendation):
// "agents/<backend>/<gpu name or hostname>".
std::string AgentsGpuName(const db::Agent& agent);

}  // namespace tessera::service
