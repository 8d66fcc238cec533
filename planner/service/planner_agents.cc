// Planner: the AgentService side. Registration, heartbeats, probes, leasing
// (gangs included), reports, hand-backs and the rendezvous relay.
#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "core/trial_backend.h"
#include "core/trial_result.h"
#include "nlohmann/json.hpp"
#include "planner/service/measurement_check.h"
#include "planner/service/planner.h"
#include "planner/service/proto_mapping.h"
#include "planner/service/recalibration.h"
#include "planner/service/trial_geometry.h"
#include "proto/convert.h"

namespace tessera::service {
namespace {

bool Holds(const db::Trial& trial, absl::string_view agent_id) {
  return std::find(trial.lease_agent_ids.begin(), trial.lease_agent_ids.end(),
                   agent_id) != trial.lease_agent_ids.end();
}

// Queued trials of one study looked at per lease decision.
constexpr int64_t kLeaseLookahead = 64;

absl::Status RequireAgentId(absl::string_view agent_id) {
  if (agent_id.empty()) {
    return absl::InvalidArgumentError("agent_id: required");
  }
  return absl::OkStatus();
}

// Queued trials in lease order: studies oldest first, then rung, then the
// higher predicted tokens/s, then id.
bool LeaseOrder(const db::Trial& a, const db::Trial& b) {
  if (a.study_id != b.study_id) return a.study_id < b.study_id;
  if (a.rung != b.rung) return a.rung < b.rung;
  const double pa = a.predicted ? a.predicted->tokens_per_s : 0;
  const double pb = b.predicted ? b.predicted->tokens_per_s : 0;
  if (pa != pb) return pa > pb;
  return a.id < b.id;
}

// Whether `agent` runs trials of `backend`: its own, or, for "" (cpu or
// cuda), any backend of Tessera's executor (a command agent needs a study's
// command).
bool ServesBackend(const db::Agent& agent, absl::string_view backend) {
  if (!backend.empty()) return agent.info.backend == backend;
  absl::StatusOr<const TrialBackend*> kind =
      FindTrialBackend(agent.info.backend);
  return kind.ok() && (*kind)->launcher == TrialLauncher::kTesseraTrial;
}

}  // namespace

absl::StatusOr<db::Agent> Planner::ActiveAgent(absl::string_view agent_id) {
  TESSERA_RETURN_IF_ERROR(RequireAgentId(agent_id));
  TESSERA_ASSIGN_OR_RETURN(db::Agent agent, store_->GetAgent(agent_id));
  if (agent.state != db::AgentState::kActive) {
    return absl::FailedPreconditionError(absl::StrCat(
        "agent ", agent_id, " was marked gone (no heartbeat); register again"));
  }
  return agent;
}

absl::StatusOr<std::vector<db::Agent>> Planner::SuitableAgents(
    absl::string_view backend, int64_t ranks) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<db::Agent> agents,
                           store_->ListAgents(db::AgentState::kActive));
  std::vector<db::Agent> out;
  for (db::Agent& a : agents) {
    if (ServesBackend(a, backend) && a.info.gpu_count >= ranks) {
      out.push_back(std::move(a));
    }
  }
  return out;
}

absl::StatusOr<std::string> Planner::AgentShortage(absl::string_view backend,
                                                   int64_t ranks) {
  TESSERA_ASSIGN_OR_RETURN(const std::vector<db::Agent> agents,
                           store_->ListAgents(db::AgentState::kActive));
  std::vector<std::string> seen;
  for (const db::Agent& a : agents) {
    if (ServesBackend(a, backend) && a.info.gpu_count >= ranks) return "";
    if (seen.size() < 4) {
      seen.push_back(absl::StrCat(a.info.id, " (", a.info.backend, ", ",
                                  a.info.gpu_count, " ranks)"));
    }
  }
  if (agents.size() > seen.size()) {
    seen.push_back(absl::StrCat("and ", agents.size() - seen.size(), " more"));
  }
  return absl::StrCat(
      "no registered agent can run its trials: each needs ", ranks, " ranks",
      backend.empty() ? "" : absl::StrCat(" on backend ", backend),
      "; registered: ", agents.empty() ? "none" : absl::StrJoin(seen, ", "),
      ". It waits for one (tessera-agent --backend ",
      backend.empty() ? "cpu|cuda" : std::string(backend), ")");
}

bool Planner::Fits(const db::Agent& agent, const Runnable& r) const {
  return ServesBackend(agent, r.backend) &&
         agent.info.gpu_count >= r.ranks_per_agent;
}

absl::StatusOr<v1::RegisterResponse> Planner::Register(
    const v1::RegisterRequest& request) {
  const v1::AgentInfo& a = request.agent();
  if (a.gpu_count() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "agent.gpu_count: must offer at least one GPU or CPU rank, got ",
        a.gpu_count()));
  }
  db::AgentRegistration r;
  r.id = a.agent_id();
  r.hostname = a.hostname();
  r.backend = a.backend();
  r.gpu_name = a.gpu_name();
  r.gpu_count = a.gpu_count();
  r.memory_bytes = a.memory_bytes();
  r.driver = a.driver();
  r.interconnect = a.interconnect();
  r.cpu_ranks = a.backend() == "cpu" ? a.gpu_count() : 0;
  r.address = a.address();
  TESSERA_ASSIGN_OR_RETURN(const db::Agent agent, store_->UpsertAgent(r));
  options_.log.Info(
      absl::StrCat("agent ", agent.info.id, " registered: ", agent.info.backend,
                   ", ", agent.info.gpu_count, " x ",
                   agent.info.gpu_name.empty() ? "rank" : agent.info.gpu_name,
                   " on ", agent.info.hostname));
  v1::RegisterResponse out;
  out.set_heartbeat_interval_ms(
      absl::ToInt64Milliseconds(options_.heartbeat_interval));
  out.set_lease_poll_interval_ms(
      absl::ToInt64Milliseconds(options_.lease_poll_interval));
  out.set_agent_id(agent.info.id);
  StartWaitingStudies();
  return out;
}

absl::StatusOr<v1::HeartbeatResponse> Planner::Heartbeat(
    const v1::HeartbeatRequest& request) {
  const std::string& agent_id = request.agent_id();
  TESSERA_RETURN_IF_ERROR(RequireAgentId(agent_id));
  const absl::Time now = Now();
  TESSERA_RETURN_IF_ERROR(store_->Heartbeat(agent_id, now));
  const absl::Time expires_at = now + options_.lease_timeout;
  db::TrialFilter held_filter;
  held_filter.leased_to = agent_id;
  TESSERA_ASSIGN_OR_RETURN(std::vector<db::Trial> held,
                           store_->ListTrials(held_filter));
  const std::set<int64_t> running(request.running_trials().begin(),
                                  request.running_trials().end());
  // A gang trial it holds but no longer runs (it restarted) cannot go on:
  // the other members wait for it or crash. Ended at once (once it had
  // time to start), as an infrastructure failure.
  TESSERA_ASSIGN_OR_RETURN(held,
                           EndGangsThisAgentLeft(agent_id, held, running, now));
  // Only the leases of trials the agent runs are extended: one it forgot
  // (it restarted) expires and runs again elsewhere.
  bool runs_all_it_holds = true;
  for (const db::Trial& t : held) {
    runs_all_it_holds = runs_all_it_holds && running.count(t.id) > 0;
  }
  std::set<int64_t> extended;
  if (runs_all_it_holds && !held.empty()) {
    // The usual case: one write, not synced on its own (see the store).
    TESSERA_ASSIGN_OR_RETURN(const std::vector<int64_t> ids,
                             store_->ExtendLeasesOf(agent_id, expires_at));
    extended.insert(ids.begin(), ids.end());
  } else {
    for (const db::Trial& t : held) {
      if (running.count(t.id) > 0 &&
          store_->ExtendLease(t.id, agent_id, expires_at).ok()) {
        extended.insert(t.id);
      }
    }
  }
  // Stop what it no longer holds, and trials of studies that ended.
  std::map<int64_t, int64_t> study_of;
  for (const db::Trial& t : held) study_of[t.id] = t.study_id;
  v1::HeartbeatResponse out;
  for (int64_t trial_id : running) {
    const bool stop =
        extended.count(trial_id) == 0 || FindRun(study_of[trial_id]) == nullptr;
    if (stop) out.add_cancel_trials(trial_id);
  }
  return out;
}

absl::StatusOr<std::vector<db::Trial>> Planner::EndGangsThisAgentLeft(
    const std::string& agent_id, std::vector<db::Trial> held,
    const std::set<int64_t>& running, absl::Time now) {
  std::vector<db::Trial> kept;
  for (db::Trial& t : held) {
    const bool left = t.gang_size > 1 && running.count(t.id) == 0 &&
                      t.started_at.has_value() &&
                      now - *t.started_at > GangMemberSilence() &&
                      !AssignmentPending(agent_id, t.id);
    if (!left) {
      kept.push_back(std::move(t));
      continue;
    }
    absl::StatusOr<db::RequeueResult> ended =
        store_->EndLeaseByInfrastructureFailure(
            t.id, agent_id,
            absl::StrCat("gang member ", agent_id,
                         " no longer runs it (the agent restarted)"));
    if (!ended.ok()) {
      kept.push_back(std::move(t));
      continue;
    }
    TrialLeaseEnded(t.id);
    absl::StatusOr<db::Trial> now_trial = store_->GetTrial(t.id);
    if (now_trial.ok()) {
      Emit(now_trial->study_id,
           absl::StrCat("trial ", t.id, " ",
                        db::TrialStateName(now_trial->status), ": ",
                        now_trial->reason),
           &*now_trial);
      RequestAdvance(now_trial->study_id);
    }
  }
  return kept;
}

bool Planner::AssignmentPending(const std::string& agent_id, int64_t trial_id) {
  absl::MutexLock lock(&mu_);
  const auto it = pending_.find(agent_id);
  if (it == pending_.end()) return false;
  for (const v1::TrialAssignment& a : it->second) {
    if (a.collective_probe_id() == 0 && a.trial_id() == trial_id) return true;
  }
  return false;
}

absl::Status Planner::ReportProbes(const v1::ReportProbesRequest& request) {
  TESSERA_RETURN_IF_ERROR(RequireAgentId(request.agent_id()));
  std::vector<db::Probe> probes;
  for (const v1::Probe& p : request.probes()) {
    db::Probe probe;
    probe.kind = p.kind();
    probe.group_size = p.group_size();
    probe.bytes = p.bytes();
    probe.value = p.value();
    probe.unit = p.unit();
    probes.push_back(std::move(probe));
  }
  TESSERA_RETURN_IF_ERROR(
      store_->AddProbes(request.agent_id(), probes).status());
  StartWaitingStudies();
  return absl::OkStatus();
}

v1::TrialAssignment Planner::Assignment(const db::Trial& trial,
                                        const Runnable& r,
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
  return a;
}

absl::StatusOr<v1::LeaseTrialResponse> Planner::LeaseTrial(
    const v1::LeaseTrialRequest& request) {
  TESSERA_ASSIGN_OR_RETURN(const db::Agent agent,
                           ActiveAgent(request.agent_id()));
  const absl::Time now = Now();
  v1::LeaseTrialResponse out;
  absl::MutexLock lease_lock(&lease_mu_);
  std::vector<v1::TrialAssignment> pending;
  {
    absl::MutexLock lock(&mu_);
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
      *out.mutable_assignment() = pending[i];
    } else {
      absl::StatusOr<db::Trial> t = store_->GetTrial(pending[i].trial_id());
      if (!t.ok() || t->status != db::TrialState::kLeased ||
          !Holds(*t, agent.info.id)) {
        continue;
      }
      *out.mutable_assignment() = pending[i];
      if (t->lease_expires_at.has_value()) {
        out.mutable_assignment()->set_lease_expiry_unix_ms(
            UnixMillis(*t->lease_expires_at));
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
  TESSERA_ASSIGN_OR_RETURN(std::optional<v1::TrialAssignment> next,
                           LeaseNext(agent, now));
  if (next.has_value()) *out.mutable_assignment() = *std::move(next);
  return out;
}

std::vector<db::Agent> Planner::IdleGang(
    const db::Agent& agent, int64_t size, absl::Time now,
    const std::function<bool(const db::Agent&)>& fits) {
  std::vector<std::string> idle;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, polled] : idle_since_poll_) {
      if (id == agent.info.id || pending_.count(id) > 0) continue;
      if (now - polled <= 2 * options_.lease_poll_interval) {
        idle.push_back(id);
      }
    }
  }
  std::vector<db::Agent> gang = {agent};
  for (const std::string& id : idle) {
    if (static_cast<int64_t>(gang.size()) >= size) break;
    absl::StatusOr<db::Agent> other = store_->GetAgent(id);
    if (other.ok() && other->state == db::AgentState::kActive && fits(*other)) {
      gang.push_back(*std::move(other));
    }
  }
  std::sort(gang.begin(), gang.end(),
            [](const db::Agent& a, const db::Agent& b) {
              return a.info.id < b.info.id;
            });
  return gang;
}

absl::StatusOr<std::optional<v1::TrialAssignment>> Planner::LeaseNext(
    const db::Agent& agent, absl::Time now) {
  // Cluster probes first: later trials and studies plan with what they
  // measure.
  TESSERA_ASSIGN_OR_RETURN(ProbeLease probe, LeaseProbe(agent, now));
  if (probe.assignment.has_value() || probe.wait) {
    return std::move(probe.assignment);
  }
  // The started studies this agent can serve, oldest first.
  std::map<int64_t, Runnable> runnable;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, r] : runnable_) {
      if (Fits(agent, r)) runnable.emplace(id, r);
    }
  }
  // Their queued trials, lowest rungs first (a bounded look at each study's
  // queue: the trials it would lease next).
  std::vector<db::Trial> queued;
  for (const auto& [study_id, r] : runnable) {
    db::TrialFilter filter;
    filter.study_id = study_id;
    filter.statuses = {db::TrialState::kQueued};
    filter.sort_by = "rung";
    filter.limit = kLeaseLookahead;
    TESSERA_ASSIGN_OR_RETURN(std::vector<db::Trial> some,
                             store_->ListTrials(filter));
    queued.insert(queued.end(), std::make_move_iterator(some.begin()),
                  std::make_move_iterator(some.end()));
  }
  std::sort(queued.begin(), queued.end(), LeaseOrder);
  const absl::Time expires_at = now + options_.lease_timeout;
  for (const db::Trial& t : queued) {
    auto r = runnable.find(t.study_id);
    if (r == runnable.end() || !Fits(agent, r->second)) continue;
    if (t.gang_size == 1) {
      const absl::Status leased =
          store_->LeaseTrial(t.id, {agent.info.id}, expires_at);
      if (!leased.ok()) {
        if (leased.code() == absl::StatusCode::kFailedPrecondition) continue;
        return leased;
      }
      {
        absl::MutexLock lock(&mu_);
        idle_since_poll_.erase(agent.info.id);
      }
      Emit(t.study_id,
           absl::StrCat("trial ", t.id, " leased to ", agent.info.id), &t);
      return Assignment(t, r->second, agent, 0, expires_at);
    }
    // A gang: this agent and other idle agents that fit, polled recently.
    const std::vector<db::Agent> gang = IdleGang(
        agent, t.gang_size, now,
        [&](const db::Agent& other) { return Fits(other, r->second); });
    // The agent waits for this trial's gang (no trial behind it jumps the
    // queue).
    if (static_cast<int64_t>(gang.size()) < t.gang_size) return std::nullopt;
    std::vector<std::string> ids;
    for (const db::Agent& g : gang) ids.push_back(g.info.id);
    const absl::Status leased = store_->LeaseTrial(t.id, ids, expires_at);
    if (!leased.ok()) {
      if (leased.code() == absl::StatusCode::kFailedPrecondition) continue;
      return leased;
    }
    std::optional<v1::TrialAssignment> mine;
    {
      absl::MutexLock lock(&mu_);
      for (size_t rank = 0; rank < gang.size(); ++rank) {
        v1::TrialAssignment a =
            Assignment(t, r->second, gang[rank], rank, expires_at);
        idle_since_poll_.erase(gang[rank].info.id);
        if (gang[rank].info.id == agent.info.id) {
          mine = std::move(a);
        } else {
          pending_[gang[rank].info.id].push_back(std::move(a));
        }
      }
    }
    Emit(t.study_id,
         absl::StrCat("trial ", t.id, " leased to the gang ",
                      absl::StrJoin(ids, ", "), " (node ranks in that order)"),
         &t);
    return mine;
  }
  return std::nullopt;
}

std::optional<Workload> Planner::TrialWorkload(const db::Trial& trial) {
  std::shared_ptr<StudyRun> run = FindRun(trial.study_id);
  if (run == nullptr) return std::nullopt;
  std::optional<Workload> study;
  {
    absl::MutexLock lock(&run->resolved_mu);
    study = run->resolved_workload;
  }
  if (!study) return std::nullopt;
  absl::StatusOr<Workload> ran =
      WorkloadTrialRan(trial, *study, run->options().layers);
  if (!ran.ok()) return std::nullopt;
  return *std::move(ran);
}

absl::Status Planner::ReportTrial(const v1::ReportTrialRequest& request) {
  TESSERA_RETURN_IF_ERROR(RequireAgentId(request.agent_id()));
  TESSERA_ASSIGN_OR_RETURN(const db::Trial leased,
                           store_->GetTrial(request.trial_id()));
  // Is the report believable? An implausible one is stored as an invalid
  // trial with the reason (so that the layout is not re-run on a lie and no
  // calibration or best layout takes it) and refused to the agent.
  absl::Status plausible = absl::OkStatus();
  absl::StatusOr<TrialResult> result;
  if (request.result_json().size() > kMaxReportBytes) {
    plausible = absl::InvalidArgumentError(absl::StrCat(
        "implausible report: result_json of ", request.result_json().size(),
        " bytes (at most ", kMaxReportBytes, ")"));
  } else {
    const nlohmann::json json =
        nlohmann::json::parse(request.result_json(), nullptr, false);
    if (json.is_discarded()) {
      return absl::InvalidArgumentError("result_json: not valid JSON");
    }
    result = TrialResultFromJson(json);
    if (!result.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("result_json: ", result.status().message()));
    }
    plausible =
        CheckMeasurement(*result, BoundsOf(leased, TrialWorkload(leased)));
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
  TESSERA_RETURN_IF_ERROR(store_->ReportTrial(
      request.trial_id(), request.agent_id(), stored, Now()));
  TrialLeaseEnded(request.trial_id());
  absl::StatusOr<db::Trial> trial = store_->GetTrial(request.trial_id());
  if (trial.ok()) {
    std::string what;
    if (trial->status == db::TrialState::kOk && trial->measured.has_value()) {
      what = absl::StrFormat("%.4g tokens/s (%.4g per GPU)",
                             trial->measured->tokens_per_s,
                             trial->measured->tokens_per_s_per_gpu);
    } else {
      what = trial->reason;
    }
    Emit(trial->study_id,
         absl::StrCat("trial ", trial->id, " ",
                      db::TrialStateName(trial->status), ": ", what),
         &*trial);
  }
  if (trial.ok()) RequestAdvance(trial->study_id);
  return plausible;
}

absl::Status Planner::ReleaseTrial(const v1::ReleaseTrialRequest& request) {
  TESSERA_RETURN_IF_ERROR(RequireAgentId(request.agent_id()));
  if (request.infrastructure_failure()) {
    // Not the layout's fault: run again (elsewhere), an attempt counted.
    TESSERA_RETURN_IF_ERROR(
        store_
            ->EndLeaseByInfrastructureFailure(
                request.trial_id(), request.agent_id(), request.reason())
            .status());
  } else {
    TESSERA_RETURN_IF_ERROR(store_->ReleaseLease(
        request.trial_id(), request.agent_id(), request.reason()));
  }
  TrialLeaseEnded(request.trial_id());
  {
    absl::MutexLock lock(&mu_);
    idle_since_poll_.erase(request.agent_id());
  }
  absl::StatusOr<db::Trial> trial = store_->GetTrial(request.trial_id());
  if (trial.ok()) {
    Emit(trial->study_id,
         absl::StrCat("trial ", trial->id, " ",
                      db::TrialStateName(trial->status), ": ", trial->reason),
         &*trial);
    // A trial that gave up is final: the study may move on.
    if (db::IsFinal(trial->status)) RequestAdvance(trial->study_id);
  }
  return absl::OkStatus();
}

void Planner::TrialLeaseEnded(int64_t trial_id) {
  rendezvous_.Clear(trial_id);
  DropPendingAssignments([&](const v1::TrialAssignment& a) {
    return a.collective_probe_id() == 0 && a.trial_id() == trial_id;
  });
}

void Planner::DropPendingAssignments(
    const std::function<bool(const v1::TrialAssignment&)>& drop) {
  absl::MutexLock lock(&mu_);
  for (auto it = pending_.begin(); it != pending_.end();) {
    std::vector<v1::TrialAssignment>& list = it->second;
    list.erase(std::remove_if(list.begin(), list.end(), drop), list.end());
    it = list.empty() ? pending_.erase(it) : std::next(it);
  }
}

void Planner::Rendezvous(const v1::RendezvousRequest& request,
                         RendezvousDone done) {
  absl::Status s = RequireAgentId(request.agent_id());
  if (!s.ok()) return done(s);
  if (request.collective_probe_id() > 0) {
    const int64_t id = request.collective_probe_id();
    std::string first;
    {
      absl::MutexLock lock(&mu_);
      auto job = probes_.find(id);
      if (job == probes_.end() ||
          std::find(job->second.agent_ids.begin(), job->second.agent_ids.end(),
                    request.agent_id()) == job->second.agent_ids.end()) {
        return done(absl::FailedPreconditionError(
            absl::StrCat("cluster probe ", id, ": agent ", request.agent_id(),
                         " does not hold its lease")));
      }
      first = job->second.agent_ids.front();
    }
    if (!request.data().empty()) {
      if (first != request.agent_id()) {
        return done(absl::FailedPreconditionError(
            absl::StrCat("cluster probe ", id, ": only node rank 0 (agent ",
                         first, ") publishes its rendezvous data")));
      }
      probe_rendezvous_.Publish(id, request.data());
      return done(request.data());
    }
    const absl::Duration wait =
        std::clamp(absl::Milliseconds(request.wait_ms()), absl::ZeroDuration(),
                   options_.max_rendezvous_wait);
    probe_rendezvous_.Fetch(id, absl::Now() + wait, std::move(done));
    return;
  }
  absl::StatusOr<db::Trial> trial = store_->GetTrial(request.trial_id());
  if (!trial.ok()) return done(trial.status());
  if (trial->status != db::TrialState::kLeased ||
      !Holds(*trial, request.agent_id())) {
    return done(absl::FailedPreconditionError(absl::StrCat(
        "trial ", trial->id, ": agent ", request.agent_id(),
        " does not hold its lease (", db::TrialStateName(trial->status), ")")));
  }
  if (!request.data().empty()) {
    if (trial->lease_agent_ids.front() != request.agent_id()) {
      return done(absl::FailedPreconditionError(absl::StrCat(
          "trial ", trial->id, ": only node rank 0 (agent ",
          trial->lease_agent_ids.front(), ") publishes its rendezvous data")));
    }
    rendezvous_.Publish(trial->id, request.data());
    return done(request.data());
  }
  const absl::Duration wait =
      std::clamp(absl::Milliseconds(request.wait_ms()), absl::ZeroDuration(),
                 options_.max_rendezvous_wait);
  rendezvous_.Fetch(trial->id, absl::Now() + wait, std::move(done));
}

}  // namespace tessera::service
