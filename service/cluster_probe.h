// The cluster probe: the planner has its agents measure the collectives
// between them, as nccl-tests would, so that the cost model plans with the
// cluster's own bus bandwidth by collective, message size and node count
// (costmodel/calibration/measured_collectives.h) instead of the GPU preset's link
// figures.
//
// When a study starts on a cluster its agents are (an "agents" GPU study,
// or a cuda study: trials run on the GPUs it names), the planner queues one
// probe per node count 2, 4, ... up to the agents it has (and that count
// itself) that the store holds no sweep for at the study's ranks per agent.
// One node is measured the way one agent's trials talk: cuda trials run a
// process per GPU over NCCL, so a one-agent NCCL sweep; cpu trials on one
// agent are threads over the in-process communicator, so the agent's own
// probes (agents/probes.h: in-process AllReduce, AllGather, ReduceScatter at
// its rank count, and its copy rate as SendRecv), stored with the first
// sweep between agents.
// Each probe is a gang lease like a trial's: every agent of it runs
// `tessera-trial --probe-collectives` for its ranks (executor/trial/
// collective_probe.h) and meets the others through the planner's
// rendezvous relay; node rank 0 reports the sweep (ReportCollectiveProbe).
// The sweep is stored with the cluster (db collective_samples) and every
// later plan, prediction, study and fit on the cluster uses it: the newest
// sweep of each (collective, node count), over an imported calibration's
// figures for the same pair when newer than the import.
//
// Probes are leased before trials. They live in the planner's memory until
// reported: a restarted planner queues the ones still missing again when a
// study next starts; a probe whose gang no longer exists is dropped.
//
//   std::vector<int64_t> todo = UnprobedNodeCounts(
//       ClusterProbeNodeCounts(agents, ranks), stored, ranks);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "db/trial_store.h"
#include "costmodel/calibration/measured_collectives.h"

namespace tessera::service {

// The node counts a cluster of `agents` agents of `backend` with
// `ranks_per_agent` ranks each is swept at: 1 for cuda agents of 2 ranks or
// more, then 2, 4, ... up to `agents`, and `agents` itself.
std::vector<int64_t> ClusterProbeNodeCounts(int64_t agents,
                                            int64_t ranks_per_agent,
                                            absl::string_view backend);

// The one-node samples of a cpu cluster from one agent's own probes (kinds
// allreduce, allgather, reducescatter at group size `ranks_per_node`, and
// memcpy as sendrecv); empty when it has none at that size.
std::vector<db::CollectiveSample> OneNodeSamplesOfProbes(
    const std::vector<db::Probe>& probes, const std::string& cluster,
    int64_t ranks_per_node, const std::string& agent_id);

// Those of `wanted` that `stored` (one cluster's samples) has no sample of
// at `ranks_per_agent` GPUs per node.
std::vector<int64_t> UnprobedNodeCounts(
    const std::vector<int64_t>& wanted,
    const std::vector<db::CollectiveSample>& stored, int64_t ranks_per_agent);

// The samples of a probe's sweep: `json_text` is what tessera-trial
// --probe-collectives wrote ({"collectives": [...]}, or "error"). Every
// point must be on the probe's `nodes` and `ranks_per_node`.
// INVALID_ARGUMENT naming the field ("collectives[3].busbw_gbs: ...");
// UNAVAILABLE with the sweep's own error when it reports one.
absl::StatusOr<std::vector<db::CollectiveSample>> SamplesOfSweep(
    absl::string_view json_text, const std::string& cluster, int64_t nodes,
    int64_t ranks_per_node, const std::string& agent_ids);

// What the cost model uses: `imported` (may be null) with, for each
// (collective, node count) the probes measured after `imported_at`
// (nullopt: no import), the newest sweep of that pair in place of the
// import's points. Null when there is nothing.
std::shared_ptr<const costmodel::MeasuredCollectives> MergeProbedCollectives(
    const costmodel::MeasuredCollectives* imported,
    std::optional<absl::Time> imported_at,
    const std::vector<db::CollectiveSample>& probed);

}  // namespace tessera::service
