// What an agent's probes can be, and how far the planner trusts them
// (issue 28, "probe poisoning"). Probes set the plausibility ceiling of the
// results of studies on the agents' own hardware ("agents" GPU,
// measurement_check.h), so a probe that lies must neither be stored nor
// raise a ceiling:
//   - CheckProbes refuses, before anything is stored, a probe whose value
//     is not finite and positive or above what the hardware can be: a GEMM
//     rate above 1.1 x the datasheet peak of the agent's GPU (by the name it
//     registered; an unknown GPU: the fastest known, kUnknownGpuPeakTflops),
//     or, on a CPU host, above kCpuHostPeakTflops; a copy or collective
//     bandwidth above kMaxProbeGbs.
//   - TrustedPeakTflopsPerRank is what an agent's GEMM probes may claim:
//     each probe's rate per rank, but at most kProbeAgreement x the highest
//     its references show (the agent's own earlier GEMM probes, as counted,
//     and the newest of every other agent on the same device), so that a
//     probe cannot raise the ceiling by itself (with no reference, the
//     probe); the agent is as fast as the best of them, so that a probe
//     taken while its host was loaded does not lower the ceiling.
//   - The ceiling of a trial is the highest trusted peak of its gang's
//     agents (GangPeakTflopsPerRank): a genuine result on a slow agent
//     passes when a faster agent of the gang could have made it.
//
//   TESSERA_RETURN_IF_ERROR(CheckProbes(agent, probes));
//   std::optional<double> peak = GangPeakTflopsPerRank(gang, all_probes);
#pragma once

#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "db/trial_store.h"

namespace tessera::service {

// A whole CPU host's fp32 GEMM rate may not exceed this (two sockets of
// today's largest AVX-512 parts are about 30 TFLOP/s).
inline constexpr double kCpuHostPeakTflops = 100;
// A GPU whose name matches no datasheet: the fastest dense rate known
// (B200-class fp8), with room.
inline constexpr double kUnknownGpuPeakTflops = 5000;
// A copy or collective bandwidth above this is not a measurement (HBM3e is
// about 8,000 GB/s).
inline constexpr double kMaxProbeGbs = 20000;
// A GEMM probe may exceed its references by this factor at most (CPU agents
// sharing cores measure up to 2.5x apart, GPUs of one type about 10%; a
// fabricated result is 1000x or more).
inline constexpr double kProbeAgreement = 4.0;

// OK when each of `probes` (from `agent`) is a possible measurement;
// INVALID_ARGUMENT naming the probe ("probes[2] gemm_f32: 45000 TFLOP/s
// ...") otherwise.
absl::Status CheckProbes(const db::Agent& agent,
                         const std::vector<db::Probe>& probes);

// `agent`'s trusted GEMM peak per rank, TFLOP/s, from `probes` (every
// agent's, oldest first; `peers` the agents they came from), or nullopt
// when it has no GEMM probe.
std::optional<double> TrustedPeakTflopsPerRank(
    const db::Agent& agent, const std::vector<db::Agent>& peers,
    const std::vector<db::Probe>& probes);

// The highest TrustedPeakTflopsPerRank of `gang`; nullopt when none of them
// has a GEMM probe.
std::optional<double> GangPeakTflopsPerRank(
    const std::vector<db::Agent>& gang, const std::vector<db::Agent>& peers,
    const std::vector<db::Probe>& probes);

}  // namespace tessera::service
