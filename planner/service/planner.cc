// Planner: construction, restart, the reaper, and the study events.
#include "planner/service/planner.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/status_macros.h"
#include "planner/service/measured_layouts.h"
#include "planner/service/proto_mapping.h"

namespace tessera::service {

Planner::Planner(db::TrialStore* store, PlannerOptions options)
    : store_(store), queries_(store), options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<Planner>> Planner::Create(
    db::TrialStore* store, PlannerOptions options) {
  if (store == nullptr) {
    return absl::InvalidArgumentError("planner: a store is needed");
  }
  if (options.lease_timeout <= absl::ZeroDuration() ||
      options.heartbeat_interval <= absl::ZeroDuration() ||
      options.lease_poll_interval <= absl::ZeroDuration() ||
      options.agent_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "planner: heartbeat interval, lease poll interval, lease timeout and "
        "agent timeout must be positive");
  }
  std::unique_ptr<Planner> planner(new Planner(store, std::move(options)));
  // The time it was down counts against no running trial: their agents get
  // a lease timeout from now to heartbeat again.
  const absl::Time now = planner->Now();
  absl::StatusOr<int64_t> extended =
      store->ForgiveOutage(now, now + planner->options_.lease_timeout);
  if (!extended.ok()) return extended.status();
  if (*extended > 0) {
    planner->options_.log.Info(absl::StrCat(
        "restart: ", *extended,
        " running trial(s) keep their lease while their agents reconnect"));
  }
  planner->ResumeStudies();
  planner->advancer_ = std::thread([p = planner.get()] { p->RunAdvancer(); });
  if (planner->options_.reaper_period > absl::ZeroDuration()) {
    planner->reaper_ = std::thread([p = planner.get()] { p->RunReaper(); });
  }
  return planner;
}

Planner::~Planner() {
  {
    absl::MutexLock lock(&reaper_mu_);
    stopping_ = true;
    reaper_wake_.SignalAll();
  }
  if (reaper_.joinable()) reaper_.join();
  {
    absl::MutexLock lock(&advance_mu_);
    advance_stopping_ = true;
  }
  // What it had not done yet is decided again from the store at restart.
  if (advancer_.joinable()) advancer_.join();
}

void Planner::RequestAdvance(int64_t study_id) {
  absl::MutexLock lock(&advance_mu_);
  if (advance_stopping_) return;
  if (advance_queued_.insert(study_id).second) {
    advance_queue_.push_back(study_id);
  }
}

void Planner::RunAdvancer() {
  while (true) {
    int64_t study_id = 0;
    {
      absl::MutexLock lock(&advance_mu_);
      advance_mu_.Await(absl::Condition(this, &Planner::AdvancerHasWork));
      if (advance_stopping_) return;
      study_id = advance_queue_.front();
      advance_queue_.pop_front();
      advance_queued_.erase(study_id);
      advance_busy_ = true;
    }
    std::shared_ptr<StudyRun> run = FindRun(study_id);
    if (run != nullptr) Advance(run);
    absl::MutexLock lock(&advance_mu_);
    advance_busy_ = false;
  }
}

void Planner::WaitForAdvances() {
  absl::MutexLock lock(&advance_mu_);
  advance_mu_.Await(absl::Condition(this, &Planner::AdvancerIdle));
}

absl::Time Planner::Now() const {
  return options_.clock ? options_.clock() : absl::Now();
}

std::vector<int64_t> Planner::EndGangsWithASilentMember(absl::Time now) {
  std::vector<int64_t> ended;
  db::TrialFilter leased;
  leased.statuses = {db::TrialState::kLeased};
  absl::StatusOr<std::vector<db::Trial>> trials = store_->ListTrials(leased);
  if (!trials.ok()) return ended;
  std::map<std::string, absl::Time> heard;  // agent id: last heartbeat
  const absl::Duration silence = GangMemberSilence();
  for (const db::Trial& t : *trials) {
    if (t.gang_size < 2) continue;
    if (heard.empty()) {
      absl::StatusOr<std::vector<db::Agent>> agents =
          store_->ListAgents(std::nullopt);
      if (!agents.ok()) return ended;
      for (const db::Agent& a : *agents) heard[a.info.id] = a.last_heartbeat_at;
    }
    for (const std::string& member : t.lease_agent_ids) {
      const auto it = heard.find(member);
      if (it == heard.end() || now - it->second <= silence) continue;
      const absl::StatusOr<db::RequeueResult> end =
          store_->EndLeaseByInfrastructureFailure(
              t.id, member,
              absl::StrCat("gang member ", member, " sent no heartbeat for ",
                           absl::FormatDuration(absl::Trunc(
                               now - it->second, absl::Milliseconds(100))),
                           " (the others cannot go on without it)"));
      if (end.ok()) ended.push_back(t.id);
      break;
    }
  }
  return ended;
}

void Planner::TellStudiesOfLostAgents(
    const std::vector<std::shared_ptr<StudyRun>>& runs,
    const std::vector<std::string>& lost) {
  const std::string which = absl::StrCat(
      lost.size() == 1 ? "agent " : "agents ", absl::StrJoin(lost, ", "),
      " sent no heartbeat for ", absl::FormatDuration(options_.agent_timeout),
      " and ", lost.size() == 1 ? "was" : "were", " marked gone");
  for (const std::shared_ptr<StudyRun>& run : runs) {
    // The spec's backend and ranks, not the study's lock (a refit holds it).
    absl::StatusOr<std::string> shortage =
        AgentShortage(run->options().backend, run->gpus_per_node());
    if (!shortage.ok()) continue;
    Emit(run->id,
         shortage->empty()
             ? absl::StrCat(which, "; its trials run again on the others")
             : absl::StrCat(which,
                            "; the study is short of agents: ", *shortage));
  }
}

void Planner::RunReaper() {
  while (true) {
    {
      absl::MutexLock lock(&reaper_mu_);
      reaper_wake_.WaitWithTimeout(&reaper_mu_, options_.reaper_period);
      if (stopping_) return;
    }
    Reap();
  }
}

void Planner::Reap() {
  const absl::Time now = Now();
  // Leases that expired: the trials run again (or crash out of attempts).
  std::set<int64_t> touched;  // trials whose lease ended
  absl::StatusOr<db::RequeueResult> expired = store_->RequeueExpiredLeases(now);
  if (!expired.ok()) {
    options_.log.Warning(absl::StrCat("reaper: re-queueing expired leases: ",
                                      expired.status().message()));
  } else {
    for (int64_t id : expired->requeued) touched.insert(id);
    for (int64_t id : expired->crashed) touched.insert(id);
  }
  // Gangs with a silent member: the others cannot go on without it.
  for (int64_t id : EndGangsWithASilentMember(now)) touched.insert(id);
  // Agents that stopped heartbeating.
  absl::StatusOr<std::vector<db::Agent>> stale =
      store_->ListStaleAgents(now, options_.agent_timeout);
  std::vector<std::string> lost;
  if (stale.ok()) {
    for (const db::Agent& agent : *stale) {
      const std::string& id = agent.info.id;
      absl::Status gone = store_->MarkAgentGone(id);
      absl::StatusOr<db::RequeueResult> requeued = store_->RequeueTrialsOf(id);
      options_.log.Info(absl::StrCat(
          "agent ", id, " sent no heartbeat for ",
          absl::FormatDuration(options_.agent_timeout), ": marked gone",
          gone.ok() ? "" : absl::StrCat(" (", gone.message(), ")")));
      if (requeued.ok()) {
        for (int64_t t : requeued->requeued) touched.insert(t);
        for (int64_t t : requeued->crashed) touched.insert(t);
      }
      lost.push_back(id);
      absl::MutexLock lock(&mu_);
      idle_since_poll_.erase(id);
      pending_.erase(id);
    }
  }
  for (int64_t trial_id : touched) {
    TrialLeaseEnded(trial_id);
    absl::StatusOr<db::Trial> trial = store_->GetTrial(trial_id);
    if (!trial.ok()) continue;
    Emit(trial->study_id,
         absl::StrCat(
             "trial ", trial_id, " ",
             trial->status == db::TrialState::kQueued ? "re-queued" : "gave up",
             ": ", trial->reason),
         &*trial);
    if (FindRun(trial->study_id) == nullptr) {
      // Its study ended while it ran: nothing may run it again.
      (void)store_->CancelQueuedTrials(trial->study_id);
    } else {
      RequestAdvance(trial->study_id);
    }
  }
  // Time budgets, and studies that wait for agents.
  std::vector<std::shared_ptr<StudyRun>> runs;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, run] : runs_) runs.push_back(run);
  }
  if (!lost.empty()) TellStudiesOfLostAgents(runs, lost);
  for (const std::shared_ptr<StudyRun>& run : runs) {
    const double budget_s = run->options().time_budget_s;
    if (budget_s > 0 && now - run->created_at >= absl::Seconds(budget_s)) {
      RequestAdvance(run->id);
    }
  }
  StartWaitingStudies();
}

absl::StatusOr<v1::StudyEvent> Planner::CurrentEvent(int64_t study_id) {
  TESSERA_ASSIGN_OR_RETURN(v1::StudySummary summary, Summary(study_id));
  v1::StudyEvent event;
  const absl::StatusOr<db::StudyStatus> state =
      StudyStateFromProto(summary.state(), "state");
  event.set_message(absl::StrCat(
      "study ", study_id, " is ",
      state.ok() ? db::StudyStatusName(*state) : "unknown",
      summary.state_reason().empty() ? "" : ": ", summary.state_reason()));
  *event.mutable_study() = std::move(summary);
  event.set_unix_ms(UnixMillis(Now()));
  return event;
}

void Planner::Emit(int64_t study_id, const std::string& message,
                   const db::Trial* trial) {
  options_.log.Info(absl::StrCat("study ", study_id, ": ", message));
  if (!events_.HasSubscribers(study_id)) return;
  absl::StatusOr<v1::StudySummary> summary = Summary(study_id);
  if (!summary.ok()) return;
  v1::StudyEvent event;
  *event.mutable_study() = *std::move(summary);
  event.set_message(message);
  if (trial != nullptr) *event.mutable_trial() = TrialToProto(*trial);
  event.set_unix_ms(UnixMillis(Now()));
  events_.Publish(event);
}

}  // namespace tessera::service
