// Leases: cluster probes (cluster_probe.h). Queued when a study opens on a
// cluster its agents are, leased to a gang before any trial, reported by
// node rank 0 and stored with the cluster for every later plan.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "core/trial_backend.h"
#include "service/agent_roster.h"
#include "service/cluster_probe.h"
#include "service/leases.h"
#include "service/proto_mapping.h"

namespace tessera::service {
namespace {

// A probe's lease: its sweep's limit, the agent's backstop past it
// (agents/trial_execution.h AgentTimeLimit) and time to report.
absl::Duration ProbeLeaseLength(absl::Duration limit) {
  return limit * 1.1 + absl::Seconds(30);
}

// Leases of one probe that may end without a sweep before it is dropped.
constexpr int64_t kProbeAttempts = 2;

}  // namespace

std::vector<int64_t> Leases::QueueClusterProbes(const LeasableStudy& study) {
  std::vector<int64_t> queued;
  if (!options_.cluster_probes || study.backend.empty()) return queued;
  // Only where the agents are the cluster the study plans for: an "agents"
  // study, or cuda trials on the GPUs it names. CPU agents measuring their
  // TCP links say nothing about an H100 cluster.
  absl::StatusOr<const TrialBackend*> kind = FindTrialBackend(study.backend);
  if (!kind.ok()) return queued;
  if (!study.agents_gpu && !(*kind)->runs_on_named_gpu) return queued;
  const int64_t ranks = study.ranks_per_agent;
  absl::StatusOr<std::vector<db::Agent>> agents =
      SuitableAgents(*store_, study.backend, ranks);
  absl::StatusOr<std::vector<db::CollectiveSample>> stored =
      store_->ListCollectiveSamples(study.cluster);
  if (!agents.ok() || !stored.ok()) {
    options_.log.Warning(absl::StrCat(
        "cluster probe for ", study.cluster, " not queued: ",
        (!agents.ok() ? agents.status() : stored.status()).message()));
    return queued;
  }
  const std::vector<int64_t> missing = UnprobedNodeCounts(
      ClusterProbeNodeCounts(static_cast<int64_t>(agents->size()), ranks,
                             study.backend),
      *stored, ranks);
  absl::MutexLock lock(&mu_);
  for (int64_t nodes : missing) {
    const bool already =
        std::any_of(probes_.begin(), probes_.end(), [&](const auto& entry) {
          const ProbeJob& j = entry.second;
          return j.cluster == study.cluster && j.nodes == nodes &&
                 j.ranks_per_node == ranks && j.backend == study.backend;
        });
    if (already) continue;
    ProbeJob job;
    job.id = next_probe_id_++;
    job.cluster = study.cluster;
    job.backend = study.backend;
    job.nodes = nodes;
    job.ranks_per_node = ranks;
    probes_[job.id] = job;
    queued.push_back(nodes);
  }
  return queued;
}

absl::StatusOr<Leases::ProbeLease> Leases::LeaseProbe(const db::Agent& agent,
                                                      absl::Time now) {
  // Expired leases first: queued again or dropped.
  std::vector<int64_t> ended;
  std::vector<ProbeJob> candidates;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = probes_.begin(); it != probes_.end();) {
      ProbeJob& job = it->second;
      if (!job.agent_ids.empty() && now > job.lease_expires_at) {
        ended.push_back(job.id);
        ProbeAttemptFailedLocked(job, "its lease expired without a sweep");
        if (job.attempts >= kProbeAttempts) {
          it = probes_.erase(it);
          continue;
        }
      }
      if (job.agent_ids.empty() && job.backend == agent.info.backend &&
          agent.info.gpu_count >= job.ranks_per_node) {
        candidates.push_back(job);
      }
      ++it;
    }
  }
  for (int64_t id : ended) ProbeLeaseEnded(id);
  ProbeLease out;
  for (const ProbeJob& job : candidates) {
    TESSERA_ASSIGN_OR_RETURN(
        const std::vector<db::Agent> able,
        SuitableAgents(*store_, job.backend, job.ranks_per_node));
    if (static_cast<int64_t>(able.size()) < job.nodes) {
      absl::MutexLock lock(&mu_);
      probes_.erase(job.id);
      options_.log.Warning(absl::StrCat(
          "cluster probe ", job.id, " of ", job.cluster, " on ", job.nodes,
          " agents dropped: only ", able.size(), " active agents can run it"));
      continue;
    }
    const std::vector<db::Agent> gang =
        IdleGang(agent, job.nodes, now, [&](const db::Agent& other) {
          return other.info.backend == job.backend &&
                 other.info.gpu_count >= job.ranks_per_node;
        });
    if (static_cast<int64_t>(gang.size()) < job.nodes) {
      out.wait = true;  // stay idle until the gang is
      return out;
    }
    const absl::Time expires_at =
        now + ProbeLeaseLength(options_.probe_time_limit);
    std::vector<std::string> ids;
    for (const db::Agent& g : gang) ids.push_back(g.info.id);
    absl::MutexLock lock(&mu_);
    auto it = probes_.find(job.id);
    if (it == probes_.end() || !it->second.agent_ids.empty()) continue;
    it->second.agent_ids = ids;
    it->second.lease_expires_at = expires_at;
    for (size_t rank = 0; rank < gang.size(); ++rank) {
      v1::TrialAssignment a;
      a.set_collective_probe_id(job.id);
      a.set_backend(job.backend);
      a.set_world_size(job.nodes * job.ranks_per_node);
      a.set_node_rank(static_cast<int64_t>(rank));
      a.set_gang_size(job.nodes);
      a.set_ranks_per_node(job.ranks_per_node);
      a.set_time_limit_s(absl::ToDoubleSeconds(options_.probe_time_limit));
      a.set_probe_max_bytes(BackendRanksOn(job.backend, RankDevice::kGpu)
                                ? options_.probe_max_bytes_cuda
                                : options_.probe_max_bytes_cpu);
      a.set_lease_expiry_unix_ms(UnixMillis(expires_at));
      idle_since_poll_.erase(gang[rank].info.id);
      if (gang[rank].info.id == agent.info.id) {
        out.assignment = std::move(a);
      } else {
        pending_[gang[rank].info.id].push_back(std::move(a));
      }
    }
    options_.log.Info(absl::StrCat("cluster probe ", job.id, " of ",
                                   job.cluster, " leased to ",
                                   absl::StrJoin(ids, ", ")));
    return out;
  }
  return out;
}

void Leases::ProbeAttemptFailedLocked(ProbeJob& job, const std::string& why) {
  ++job.attempts;
  const bool dropped = job.attempts >= kProbeAttempts;
  options_.log.Warning(
      absl::StrCat("cluster probe ", job.id, " of ", job.cluster, " on ",
                   job.nodes, " agents: ", why,
                   dropped ? "; dropped (the cost model keeps the "
                             "preset's link figures for it)"
                           : "; queued again"));
  job.agent_ids.clear();
}

void Leases::ProbeLeaseEnded(int64_t probe_id) {
  probe_rendezvous_.Clear(probe_id);
  DropPendingAssignments([&](const v1::TrialAssignment& a) {
    return a.collective_probe_id() == probe_id;
  });
}

absl::Status Leases::ReportCollectiveProbe(const std::string& agent_id,
                                           int64_t collective_probe_id,
                                           const std::string& result_json) {
  TESSERA_RETURN_IF_ERROR(RequireAgentId(agent_id));
  const int64_t id = collective_probe_id;
  ProbeJob job;
  {
    absl::MutexLock lock(&mu_);
    auto it = probes_.find(id);
    if (it == probes_.end() || it->second.agent_ids.empty() ||
        it->second.agent_ids.front() != agent_id) {
      return absl::FailedPreconditionError(
          absl::StrCat("cluster probe ", id, ": agent ", agent_id,
                       " is not the node rank 0 of a leased probe"));
    }
    job = it->second;
  }
  const std::string agent_ids = absl::StrJoin(job.agent_ids, ",");
  absl::StatusOr<std::vector<db::CollectiveSample>> samples = SamplesOfSweep(
      result_json, job.cluster, job.nodes, job.ranks_per_node, agent_ids);
  if (!samples.ok()) {
    {
      absl::MutexLock lock(&mu_);
      auto it = probes_.find(id);
      if (it != probes_.end()) {
        if (absl::IsUnavailable(samples.status())) {
          ProbeAttemptFailedLocked(it->second,
                                   std::string(samples.status().message()));
          if (it->second.attempts >= kProbeAttempts) probes_.erase(it);
        } else {
          options_.log.Warning(absl::StrCat(
              "cluster probe ", id,
              ": malformed sweep dropped: ", samples.status().message()));
          probes_.erase(it);
        }
      }
    }
    ProbeLeaseEnded(id);
    // A sweep that failed is a report received; a malformed one is not.
    return absl::IsUnavailable(samples.status()) ? absl::OkStatus()
                                                 : samples.status();
  }
  // A cpu cluster's one-agent collectives are its agents' in-process ones
  // (cluster_probe.h): stored with its first sweep between agents.
  absl::StatusOr<const TrialBackend*> kind = FindTrialBackend(job.backend);
  if (kind.ok() && !(*kind)->one_agent_sweep && job.nodes >= 2) {
    absl::StatusOr<std::vector<db::CollectiveSample>> stored =
        store_->ListCollectiveSamples(job.cluster);
    const bool have_one_node =
        stored.ok() &&
        std::any_of(
            stored->begin(), stored->end(), [&](const db::CollectiveSample& s) {
              return s.nodes == 1 && s.gpus_per_node == job.ranks_per_node;
            });
    if (stored.ok() && !have_one_node) {
      db::ProbeFilter of;
      of.agent_id = job.agent_ids.front();
      absl::StatusOr<std::vector<db::Probe>> probes = store_->ListProbes(of);
      if (probes.ok()) {
        const std::vector<db::CollectiveSample> one = OneNodeSamplesOfProbes(
            *probes, job.cluster, job.ranks_per_node, job.agent_ids.front());
        samples->insert(samples->end(), one.begin(), one.end());
      }
    }
  }
  TESSERA_RETURN_IF_ERROR(store_->AddCollectiveSamples(*samples).status());
  {
    absl::MutexLock lock(&mu_);
    probes_.erase(id);
  }
  ProbeLeaseEnded(id);
  // The headline figure: AllGather's bus bandwidth at the largest size.
  double largest_bytes = 0;
  double ag_gbs = 0;
  for (const db::CollectiveSample& s : *samples) {
    if (s.collective == "all_gather" && s.nodes == job.nodes &&
        s.bytes >= largest_bytes) {
      largest_bytes = static_cast<double>(s.bytes);
      ag_gbs = s.busbw_gbs;
    }
  }
  desk_->ClusterProbed(
      job.cluster,
      absl::StrFormat("cluster probe on %d agent%s (%s): %d collective "
                      "points stored; AllGather %.3g GB/s bus bandwidth at "
                      "%.3g MiB",
                      job.nodes, job.nodes == 1 ? "" : "s", agent_ids,
                      samples->size(), ag_gbs, largest_bytes / (1 << 20)));
  return absl::OkStatus();
}

}  // namespace tessera::service
