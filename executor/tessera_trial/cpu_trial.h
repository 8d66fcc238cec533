// The CPU backend's trial and collective sweep: the ranks as threads of this
// process over the in-process communicator (a trial on one agent), or one
// process per rank over TCP (collective probes and trials across agents);
// OpenBLAS GEMMs, host memory bounded by the trial's memory limit.
// Dispatched by name through executor_backends.h.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "core/trial_result.h"
#include "executor/trial/collective_probe.h"
#include "executor/trial/collective_sweep.h"
#include "executor/trial/trial_config.h"

namespace tessera::executor {

// A validated config's trial on CPU threads (trial_runner.h's contract).
TrialResult RunCpuTrial(const TrialConfig& config);

// This process's rank of a TCP world and the collective sweep on host
// buffers; the rendezvous' or the sweep's error (the peers told at once).
absl::StatusOr<std::vector<SweptCollective>> RunCpuCollectiveSweep(
    const CollectiveProbeConfig& config);

}  // namespace tessera::executor
