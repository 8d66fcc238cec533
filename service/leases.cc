// Leases: registration, heartbeats, probes, leasing (gangs included),
// reports, hand-backs and the rendezvous relay. The reaper is in
// lease_reaper.cc, the cluster probes' leases in cluster_probe_leases.cc.
#include "service/leases.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "core/trial_result.h"
#include "nlohmann/json.hpp"
#include "service/agent_roster.h"
#include "service/framework_config.h"
#include "service/measurement_check.h"
#include "service/probe_check.h"
#include "service/proto_mapping.h"
#include "proto/convert.h"

namespace tessera::service {
namespace {

bool Holds(const db::Trial& trial, absl::string_view agent_id) {
  return std::find(trial.lease_agent_ids.begin(), trial.lease_agent_ids.end(),
                   agent_id) != trial.lease_agent_ids.end();
}

// Lease decisions one poll makes at most when another write took its trial
// first.
constexpr int kLeaseAttempts = 4;

// How long a queue read empty is believed without reading it again, while
// the store says no trial was queued since (Leases::nothing_queued_).
constexpr absl::Duration kNothingQueuedFor = absl::Seconds(1);
// Distinct study sets remembered (one per kind of agent; cleared past it).
constexpr size_t kMaxNothingQueuedSets = 64;

}  // namespace

Leases::Leases(db::TrialStore* store, PlannerOptions options,
               StudyEvents* events, StudyDesk* desk)
    : store_(store),
      options_(std::move(options)),
      pace_(options_),
      events_(events),
      desk_(desk),
      started_at_(Now()) {}

Leases::~Leases() { StopReaperThread(); }

absl::Time Leases::Now() const {
  return options_.clock ? options_.clock() : absl::Now();
}

absl::Status Leases::LoadAgents() {
  TESSERA_ASSIGN_OR_RETURN(const std::vector<db::Agent> active,
                           store_->ListAgents(db::AgentState::kActive));
  liveness_.Load(active);
  return absl::OkStatus();
}

Pace Leases::TellPace() {
  return pace_.Tell(liveness_.active_count(), Now());
}

absl::StatusOr<db::Agent> Leases::KnownActiveAgent(
    const std::string& agent_id) {
  TESSERA_RETURN_IF_ERROR(RequireAgentId(agent_id));
  if (std::optional<db::Agent> known = liveness_.Active(agent_id)) {
    return *std::move(known);
  }
  // Unknown here: the store says why (or knows it active after all).
  TESSERA_ASSIGN_OR_RETURN(db::Agent agent, ActiveAgent(*store_, agent_id));
  liveness_.Adopt(agent);
  return agent;
}

void Leases::OpenStudy(int64_t study_id, LeasableStudy study) {
  const std::vector<int64_t> probes = QueueClusterProbes(study);
  if (!probes.empty()) {
    events_->Emit(
        study_id,
        absl::StrCat("cluster probe queued for ", study.cluster,
                     ": the collectives' bus bandwidth on ",
                     absl::StrJoin(probes, ", "), " agent",
                     probes.size() == 1 && probes[0] == 1 ? "" : "s", " of ",
                     study.ranks_per_agent,
                     " ranks (run before the trials; every later plan on "
                     "this cluster uses it)"));
  }
  auto shared = std::make_shared<const LeasableStudy>(std::move(study));
  absl::MutexLock lock(&mu_);
  open_[study_id] = std::move(shared);
}

void Leases::CloseStudy(int64_t study_id) {
  absl::MutexLock lock(&mu_);
  open_.erase(study_id);
}

bool Leases::IsOpen(int64_t study_id) {
  absl::MutexLock lock(&mu_);
  return open_.count(study_id) > 0;
}

void Leases::TellStudy(int64_t trial_id) {
  absl::StatusOr<db::Trial> trial = store_->GetTrial(trial_id);
  if (!trial.ok()) return;
  std::string what = trial->reason;
  if (trial->status == db::TrialState::kOk && trial->measured.has_value()) {
    what = absl::StrFormat("%.4g tokens/s (%.4g per GPU)",
                           trial->measured->tokens_per_s,
                           trial->measured->tokens_per_s_per_gpu);
  }
  events_->Emit(trial->study_id,
                absl::StrCat("trial ", trial_id, " ",
                             trial->status == db::TrialState::kQueued
                                 ? "re-queued"
                                 : db::TrialStateName(trial->status),
                             ": ", what),
                &*trial);
  desk_->TrialChanged(trial->study_id);
}

bool Leases::Fits(const db::Agent& agent, const LeasableStudy& r) const {
  return ServesBackend(agent, r.backend) &&
         agent.info.gpu_count >= r.ranks_per_agent;
}

absl::StatusOr<db::Agent> Leases::Register(
    const db::AgentRegistration& registration) {
  TESSERA_ASSIGN_OR_RETURN(const db::Agent agent,
                           store_->UpsertAgent(registration));
  liveness_.Registered(agent);
  options_.log.Info(
      absl::StrCat("agent ", agent.info.id, " registered: ", agent.info.backend,
                   ", ", agent.info.gpu_count, " x ",
                   agent.info.gpu_name.empty() ? "rank" : agent.info.gpu_name,
                   " on ", agent.info.hostname));
  desk_->AgentsChanged();
  return agent;
}

absl::StatusOr<std::vector<int64_t>> Leases::Heartbeat(
    const std::string& agent_id, const std::set<int64_t>& running) {
  TESSERA_RETURN_IF_ERROR(RequireAgentId(agent_id));
  const absl::Time now = Now();
  // In memory (agent_liveness.h): no store write per heartbeat.
  if (!liveness_.Beat(agent_id, now)) {
    TESSERA_RETURN_IF_ERROR(KnownActiveAgent(agent_id).status());
    liveness_.Beat(agent_id, now);
  }
  const absl::Time expires_at = now + pace_.Current(now).lease_timeout;
  TESSERA_ASSIGN_OR_RETURN(std::vector<db::HeldLease> held,
                           store_->ListLeasesHeldBy(agent_id));
  // A gang trial it holds but no longer runs (it restarted) cannot go on:
  // the other members wait for it or crash. Ended at once (once it had
  // time to start), as an infrastructure failure.
  TESSERA_ASSIGN_OR_RETURN(held,
                           EndGangsThisAgentLeft(agent_id, held, running, now));
  // Only the leases of trials the agent runs are extended: one it forgot
  // (it restarted) expires and runs again elsewhere. In memory too: the
  // reaper writes them before it expires anything.
  std::map<int64_t, int64_t> study_of;
  for (const db::HeldLease& t : held) {
    if (running.count(t.trial_id) == 0) continue;
    liveness_.Extended(t.trial_id, agent_id, expires_at);
    study_of[t.trial_id] = t.study_id;
  }
  // Stop what it no longer holds, and trials of studies that ended.
  std::vector<int64_t> stop;
  for (int64_t trial_id : running) {
    const auto it = study_of.find(trial_id);
    if (it == study_of.end() || !desk_->IsActive(it->second)) {
      stop.push_back(trial_id);
    }
  }
  return stop;
}

absl::StatusOr<std::vector<db::HeldLease>> Leases::EndGangsThisAgentLeft(
    const std::string& agent_id, std::vector<db::HeldLease> held,
    const std::set<int64_t>& running, absl::Time now) {
  std::vector<db::HeldLease> kept;
  const absl::Duration silence = GangMemberSilence();
  // Only an agent that registered again since the lease began left it (it
  // restarted): a member whose part ended stops naming the trial too, until
  // node rank 0's report ends the lease.
  const absl::Time registered =
      liveness_.RegisteredAt(agent_id).value_or(absl::InfinitePast());
  for (db::HeldLease& t : held) {
    const bool left = t.gang_size > 1 && running.count(t.trial_id) == 0 &&
                      t.started_at.has_value() &&
                      registered > *t.started_at &&
                      now - *t.started_at > silence &&
                      !AssignmentPending(agent_id, t.trial_id);
    if (!left) {
      kept.push_back(t);
      continue;
    }
    // A gang leased before this planner started met through the board that
    // died with the last one: not the trial's failure, no attempt counted.
    const absl::Status ended =
        *t.started_at < started_at_
            ? store_->ReleaseLease(
                  t.trial_id, agent_id,
                  absl::StrCat("gang member ", agent_id,
                               " no longer runs it: it reconnected after the "
                               "planner's restart, which lost the gang's "
                               "rendezvous"))
            : store_
                  ->EndLeaseByInfrastructureFailure(
                      t.trial_id, agent_id,
                      absl::StrCat("gang member ", agent_id,
                                   " no longer runs it (it registered again "
                                   "since the trial began: it restarted)"))
                  .status();
    if (!ended.ok()) {
      kept.push_back(t);
      continue;
    }
    TrialLeaseEnded(t.trial_id);
    TellStudy(t.trial_id);
  }
  return kept;
}

bool Leases::AssignmentPending(const std::string& agent_id, int64_t trial_id) {
  absl::MutexLock lock(&mu_);
  const auto it = pending_.find(agent_id);
  if (it == pending_.end()) return false;
  for (const v1::TrialAssignment& a : it->second) {
    if (a.collective_probe_id() == 0 && a.trial_id() == trial_id) return true;
  }
  return false;
}

absl::Status Leases::ReportProbes(const std::string& agent_id,
                                  std::vector<db::Probe> probes) {
  TESSERA_RETURN_IF_ERROR(RequireAgentId(agent_id));
  TESSERA_ASSIGN_OR_RETURN(const db::Agent agent, store_->GetAgent(agent_id));
  // A probe that cannot be a measurement is refused whole, before it could
  // set any study's plausibility ceiling (probe_check.h).
  TESSERA_RETURN_IF_ERROR(CheckProbes(agent, probes));
  TESSERA_RETURN_IF_ERROR(store_->AddProbes(agent_id, probes).status());
  desk_->AgentsChanged();
  return absl::OkStatus();
}

v1::TrialAssignment Leases::Assignment(const db::Trial& trial,
                                       const LeasableStudy& r,
                                       const db::Agent& agent,
                                       int64_t node_rank,
                                       absl::Time expires_at) const {
  const Layout& l = trial.layout;
  v1::TrialAssignment a;
  a.set_trial_id(trial.id);
  a.set_study_id(trial.study_id);
  *a.mutable_model() = r.model;
  *a.mutable_layout() = LayoutToProto(l);
  a.set_global_batch(l.micro_batch * l.dp * l.grad_accum);
  a.set_seq_len(r.seq_len);
  a.set_warmup_steps(trial.warmup_steps);
  a.set_steps(trial.steps);
  a.set_backend(agent.info.backend);
  a.set_world_size(l.world_size());
  a.set_node_rank(node_rank);
  a.set_gang_size(trial.gang_size);
  a.set_ranks_per_node(l.world_size() / trial.gang_size);
  a.set_time_limit_s(r.options.trial_time_limit_s);
  a.set_memory_limit_bytes(r.options.memory_limit_bytes);
  a.set_seed(r.options.seed);
  a.set_command(r.options.command);
  a.set_stack(r.stack);
  a.set_precision(r.precision);
  a.set_lease_expiry_unix_ms(UnixMillis(expires_at));
  if (!a.command().empty()) AttachFrameworkConfig(a);
  return a;
}

absl::StatusOr<std::optional<v1::TrialAssignment>> Leases::LeaseTrial(
    const std::string& agent_id) {
  TESSERA_ASSIGN_OR_RETURN(const db::Agent agent, KnownActiveAgent(agent_id));
  // Decided under lease_mu_, written outside it: the lease writes of
  // concurrent polls then share a group commit (db/group_commit.h), while
  // the trial and the gang they chose stay reserved (no other decision
  // takes them meanwhile). A trial another write took first is passed over.
  for (int attempt = 0; attempt < kLeaseAttempts; ++attempt) {
    const absl::Time now = Now();
    TESSERA_ASSIGN_OR_RETURN(LeaseDecision d, DecideLease(agent, now));
    if (!d.trial.has_value()) return std::move(d.ready);
    std::vector<std::string> ids;
    for (const db::Agent& g : d.gang) ids.push_back(g.info.id);
    const absl::Status leased =
        store_->LeaseTrial(d.trial->id, ids, d.expires_at);
    std::optional<v1::TrialAssignment> mine;
    {
      absl::MutexLock lock(&mu_);
      reserved_trials_.erase(d.trial->id);
      for (const std::string& id : ids) reserved_agents_.erase(id);
      if (leased.ok()) {
        for (size_t rank = 0; rank < d.gang.size(); ++rank) {
          v1::TrialAssignment a = Assignment(*d.trial, *d.study, d.gang[rank],
                                             static_cast<int64_t>(rank),
                                             d.expires_at);
          idle_since_poll_.erase(d.gang[rank].info.id);
          if (d.gang[rank].info.id == agent.info.id) {
            mine = std::move(a);
          } else {
            pending_[d.gang[rank].info.id].push_back(std::move(a));
          }
        }
      }
    }
    if (leased.code() == absl::StatusCode::kFailedPrecondition) continue;
    if (!leased.ok()) return leased;
    events_->Emit(d.trial->study_id,
                  d.gang.size() == 1
                      ? absl::StrCat("trial ", d.trial->id, " leased to ",
                                     agent.info.id)
                      : absl::StrCat("trial ", d.trial->id,
                                     " leased to the gang ",
                                     absl::StrJoin(ids, ", "),
                                     " (node ranks in that order)"),
                  &*d.trial);
    return mine;
  }
  return std::nullopt;  // raced to the end: poll again
}

absl::StatusOr<Leases::LeaseDecision> Leases::DecideLease(
    const db::Agent& agent, absl::Time now) {
  LeaseDecision out;
  absl::MutexLock lease_lock(&lease_mu_);
  std::vector<v1::TrialAssignment> pending;
  {
    absl::MutexLock lock(&mu_);
    // A gang member whose lease is being written: its assignment follows.
    if (reserved_agents_.count(agent.info.id) > 0) return out;
    idle_since_poll_[agent.info.id] = now;
    auto it = pending_.find(agent.info.id);
    if (it != pending_.end()) {
      pending.swap(it->second);
      pending_.erase(it);
    }
  }
  // A gang formed while the agent was away: its lease, if still held.
  for (size_t i = 0; i < pending.size(); ++i) {
    if (pending[i].collective_probe_id() > 0) {
      absl::MutexLock lock(&mu_);
      auto job = probes_.find(pending[i].collective_probe_id());
      if (job == probes_.end() ||
          std::find(job->second.agent_ids.begin(), job->second.agent_ids.end(),
                    agent.info.id) == job->second.agent_ids.end()) {
        continue;
      }
      out.ready = pending[i];
    } else {
      absl::StatusOr<db::Trial> t = store_->GetTrial(pending[i].trial_id());
      if (!t.ok() || t->status != db::TrialState::kLeased ||
          !Holds(*t, agent.info.id)) {
        continue;
      }
      out.ready = pending[i];
      if (t->lease_expires_at.has_value()) {
        out.ready->set_lease_expiry_unix_ms(UnixMillis(*t->lease_expires_at));
      }
    }
    absl::MutexLock lock(&mu_);
    idle_since_poll_.erase(agent.info.id);
    if (i + 1 < pending.size()) {
      auto& rest = pending_[agent.info.id];
      rest.insert(rest.begin(), pending.begin() + i + 1, pending.end());
    }
    return out;
  }
  // Cluster probes first: later trials and studies plan with what they
  // measure.
  TESSERA_ASSIGN_OR_RETURN(ProbeLease probe, LeaseProbe(agent, now));
  if (probe.assignment.has_value() || probe.wait) {
    out.ready = std::move(probe.assignment);
    return out;
  }
  // The started studies this agent can serve, oldest first.
  std::map<int64_t, std::shared_ptr<const LeasableStudy>> runnable;
  // Their first queued trial in lease order (studies oldest first, then
  // rung, then the higher predicted tokens/s, then id) that no other lease
  // is writing decides this poll (it is leased, or its gang waited for).
  // Reservations are only added under lease_mu_, which this decision holds,
  // so the store passes over the reserved trials and one row is all it
  // reads. (It read 64 full rows per poll, 16% of the planner's CPU at 2,000
  // agents; then the reserved rows and one more, which a full queue's lease
  // writes waiting for their group commit made dozens.)
  std::vector<int64_t> passed_over;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, r] : open_) {
      if (Fits(agent, *r)) runnable.emplace(id, r);
    }
    passed_over.assign(reserved_trials_.begin(), reserved_trials_.end());
  }
  std::vector<int64_t> runnable_ids;
  for (const auto& [study_id, r] : runnable) runnable_ids.push_back(study_id);
  // An idle fleet polls often: a queue read empty stays empty until a
  // trial is queued (2,000 idle agents read it 2,000 times a second).
  const uint64_t generation = store_->QueuedTrialsGeneration();
  if (auto seen = nothing_queued_.find(runnable_ids);
      seen != nothing_queued_.end() &&
      seen->second.generation == generation &&
      now - seen->second.at < kNothingQueuedFor) {
    return out;
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<db::Trial> queued,
                           store_->ListQueuedTrials(runnable_ids, 1,
                                                    passed_over));
  if (queued.empty()) {
    if (nothing_queued_.size() >= kMaxNothingQueuedSets) nothing_queued_.clear();
    nothing_queued_[runnable_ids] = NothingQueued{generation, now};
    return out;
  }
  // Of a study this agent fits (only those were asked for) and not being
  // written (the reserved ones were passed over, and none is added while
  // this decision holds lease_mu_).
  db::Trial& t = queued.front();
  const auto it = runnable.find(t.study_id);
  if (it == runnable.end()) return out;
  const std::shared_ptr<const LeasableStudy>& study = it->second;
  out.expires_at = now + pace_.Current(now).lease_timeout;
  std::vector<db::Agent> gang = {agent};
  if (t.gang_size > 1) {
    // This agent and other idle agents that fit, polled recently.
    gang = IdleGang(agent, t.gang_size, now, [&](const db::Agent& other) {
      return Fits(other, *study);
    });
    // The agent waits for this trial's gang (no trial behind it jumps the
    // queue).
    if (static_cast<int64_t>(gang.size()) < t.gang_size) return out;
  }
  absl::MutexLock lock(&mu_);
  reserved_trials_.insert(t.id);
  for (const db::Agent& g : gang) {
    reserved_agents_.insert(g.info.id);
    idle_since_poll_.erase(g.info.id);
  }
  out.study = study;
  out.gang = std::move(gang);
  out.trial = std::move(t);
  return out;
}

std::vector<db::Agent> Leases::IdleGang(
    const db::Agent& agent, int64_t size, absl::Time now,
    const std::function<bool(const db::Agent&)>& fits) {
  std::vector<std::string> idle;
  const absl::Duration poll = pace_.Current(now).lease_poll;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, polled] : idle_since_poll_) {
      if (id == agent.info.id || pending_.count(id) > 0) continue;
      if (now - polled <= 2 * poll) idle.push_back(id);
    }
  }
  std::vector<db::Agent> gang = {agent};
  for (const std::string& id : idle) {
    if (static_cast<int64_t>(gang.size()) >= size) break;
    std::optional<db::Agent> other = liveness_.Active(id);
    if (other.has_value() && fits(*other)) gang.push_back(*std::move(other));
  }
  std::sort(gang.begin(), gang.end(),
            [](const db::Agent& a, const db::Agent& b) {
              return a.info.id < b.info.id;
            });
  return gang;
}

absl::Status Leases::ReportTrial(const std::string& agent_id, int64_t trial_id,
                                 const std::string& result_json) {
  TESSERA_RETURN_IF_ERROR(RequireAgentId(agent_id));
  TESSERA_ASSIGN_OR_RETURN(const db::Trial leased, store_->GetTrial(trial_id));
  // Is the report believable? An implausible one is stored as an invalid
  // trial with the reason (so that the layout is not re-run on a lie and no
  // calibration or best layout takes it) and refused to the agent.
  absl::Status plausible = absl::OkStatus();
  absl::StatusOr<TrialResult> result;
  if (result_json.size() > kMaxReportBytes) {
    plausible = absl::InvalidArgumentError(
        absl::StrCat("implausible report: result_json of ", result_json.size(),
                     " bytes (at most ", kMaxReportBytes, ")"));
  } else {
    const nlohmann::json json =
        nlohmann::json::parse(result_json, nullptr, false);
    if (json.is_discarded()) {
      return absl::InvalidArgumentError("result_json: not valid JSON");
    }
    result = TrialResultFromJson(json);
    if (!result.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("result_json: ", result.status().message()));
    }
    MeasurementBounds bounds = BoundsOf(leased, desk_->TrialWorkload(leased));
    if (std::optional<AgentsCeiling> ceiling = AgentsGpuCeiling(leased);
        ceiling.has_value() && bounds.peak_flops_per_gpu.has_value()) {
      bounds.peak_flops_per_gpu = ceiling->tflops_per_rank * 1e12;
      // A CPU host's GEMM probe is a share of cores others may use too.
      if (ceiling->cpu_hosts) {
        bounds.peak_slack = std::max(bounds.peak_slack, kCpuPeakSlack);
      }
    }
    plausible = CheckMeasurement(*result, bounds);
  }
  TrialResult stored;
  if (plausible.ok()) {
    stored = *std::move(result);
  } else {
    stored.status = TrialStatus::kInvalid;
    stored.reason = std::string(plausible.message());
    stored.layout = leased.layout;
    stored.ranks = leased.layout.world_size();
    stored.backend = "unknown (report refused)";
  }
  const absl::Time now = Now();
  if (absl::Status s = store_->ReportTrial(trial_id, agent_id, stored, now);
      !s.ok()) {
    outage_.StoreFailed(now, s);
    return s;
  }
  TrialLeaseEnded(trial_id);
  TellStudy(trial_id);
  return plausible;
}

absl::Status Leases::ReleaseTrial(const std::string& agent_id, int64_t trial_id,
                                  const std::string& reason,
                                  bool infrastructure_failure) {
  TESSERA_RETURN_IF_ERROR(RequireAgentId(agent_id));
  if (infrastructure_failure) {
    // Not the layout's fault: run again (elsewhere), an attempt counted.
    TESSERA_RETURN_IF_ERROR(
        store_->EndLeaseByInfrastructureFailure(trial_id, agent_id, reason)
            .status());
  } else {
    TESSERA_RETURN_IF_ERROR(store_->ReleaseLease(trial_id, agent_id, reason));
  }
  TrialLeaseEnded(trial_id);
  {
    absl::MutexLock lock(&mu_);
    idle_since_poll_.erase(agent_id);
  }
  TellStudy(trial_id);
  return absl::OkStatus();
}

std::optional<Leases::AgentsCeiling> Leases::AgentsGpuCeiling(
    const db::Trial& trial) {
  {
    absl::MutexLock lock(&mu_);
    const auto it = open_.find(trial.study_id);
    if (it == open_.end() || !it->second->agents_gpu) return std::nullopt;
  }
  // The gang that holds (or held, for a late report) its lease.
  const std::vector<std::string>& holders = trial.lease_agent_ids.empty()
                                                ? trial.lost_lease_agent_ids
                                                : trial.lease_agent_ids;
  absl::StatusOr<std::vector<db::Agent>> agents =
      store_->ListAgents(std::nullopt);
  if (!agents.ok() || holders.empty()) return std::nullopt;
  std::vector<db::Agent> gang;
  for (const db::Agent& a : *agents) {
    if (std::find(holders.begin(), holders.end(), a.info.id) != holders.end()) {
      gang.push_back(a);
    }
  }
  // Every GEMM probe of the kinds the gang measured (theirs and their
  // peers', the references of probe_check.h).
  std::set<std::string> kinds;
  std::vector<db::Probe> probes;
  for (const db::Agent& a : gang) {
    db::ProbeFilter of_agent;
    of_agent.agent_id = a.info.id;
    absl::StatusOr<std::vector<db::Probe>> own = store_->ListProbes(of_agent);
    if (!own.ok()) return std::nullopt;
    for (const db::Probe& p : *own) {
      if (absl::StartsWith(p.kind, "gemm")) kinds.insert(p.kind);
    }
  }
  for (const std::string& kind : kinds) {
    db::ProbeFilter of_kind;
    of_kind.kind = kind;
    absl::StatusOr<std::vector<db::Probe>> some = store_->ListProbes(of_kind);
    if (!some.ok()) return std::nullopt;
    probes.insert(probes.end(), some->begin(), some->end());
  }
  std::sort(probes.begin(), probes.end(),
            [](const db::Probe& a, const db::Probe& b) {
              return a.measured_at != b.measured_at
                         ? a.measured_at < b.measured_at
                         : a.id < b.id;
            });
  const std::optional<double> peak =
      GangPeakTflopsPerRank(gang, *agents, probes);
  if (!peak.has_value()) return std::nullopt;
  return AgentsCeiling{*peak, kinds == std::set<std::string>{"gemm_f32"}};
}

void Leases::TrialLeaseEnded(int64_t trial_id) {
  rendezvous_.Clear(trial_id);
  DropPendingAssignments([&](const v1::TrialAssignment& a) {
    return a.collective_probe_id() == 0 && a.trial_id() == trial_id;
  });
}

void Leases::DropPendingAssignments(
    const std::function<bool(const v1::TrialAssignment&)>& drop) {
  absl::MutexLock lock(&mu_);
  for (auto it = pending_.begin(); it != pending_.end();) {
    std::vector<v1::TrialAssignment>& list = it->second;
    list.erase(std::remove_if(list.begin(), list.end(), drop), list.end());
    it = list.empty() ? pending_.erase(it) : std::next(it);
  }
}

void Leases::Rendezvous(const RendezvousCall& call, RendezvousDone done) {
  absl::Status s = RequireAgentId(call.agent_id);
  if (!s.ok()) return done(s);
  if (call.collective_probe_id > 0) {
    const int64_t id = call.collective_probe_id;
    std::string first;
    {
      absl::MutexLock lock(&mu_);
      auto job = probes_.find(id);
      if (job == probes_.end() ||
          std::find(job->second.agent_ids.begin(), job->second.agent_ids.end(),
                    call.agent_id) == job->second.agent_ids.end()) {
        return done(absl::FailedPreconditionError(
            absl::StrCat("cluster probe ", id, ": agent ", call.agent_id,
                         " does not hold its lease")));
      }
      first = job->second.agent_ids.front();
    }
    if (!call.data.empty()) {
      if (first != call.agent_id) {
        return done(absl::FailedPreconditionError(
            absl::StrCat("cluster probe ", id, ": only node rank 0 (agent ",
                         first, ") publishes its rendezvous data")));
      }
      probe_rendezvous_.Publish(id, call.data);
      return done(call.data);
    }
    const absl::Duration wait = std::clamp(call.wait, absl::ZeroDuration(),
                                           options_.max_rendezvous_wait);
    probe_rendezvous_.Fetch(id, absl::Now() + wait, std::move(done));
    return;
  }
  absl::StatusOr<db::Trial> trial = store_->GetTrial(call.trial_id);
  if (!trial.ok()) return done(trial.status());
  if (trial->status != db::TrialState::kLeased ||
      !Holds(*trial, call.agent_id)) {
    return done(absl::FailedPreconditionError(absl::StrCat(
        "trial ", trial->id, ": agent ", call.agent_id,
        " does not hold its lease (", db::TrialStateName(trial->status), ")")));
  }
  if (!call.data.empty()) {
    if (trial->lease_agent_ids.front() != call.agent_id) {
      return done(absl::FailedPreconditionError(absl::StrCat(
          "trial ", trial->id, ": only node rank 0 (agent ",
          trial->lease_agent_ids.front(), ") publishes its rendezvous data")));
    }
    rendezvous_.Publish(trial->id, call.data);
    return done(call.data);
  }
  const absl::Duration wait =
      std::clamp(call.wait, absl::ZeroDuration(), options_.max_rendezvous_wait);
  rendezvous_.Fetch(trial->id, absl::Now() + wait, std::move(done));
}

}  // namespace tessera::service
