// Leases: the reaper. Every reaper_period it writes what heartbeats taught
// (agent_liveness.h), then re-queues expired leases, ends gangs with a
// silent member, marks silent agents gone (their trials run again
// elsewhere), tells the studies of each change and gives the studies their
// Tick (time budgets, studies waiting for agents). When that write fails,
// the store's lease expiries are older than the heartbeats: nothing
// expires in that pass (and the failure is an outage, forgiven when the
// store writes again).
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "service/leases.h"

namespace tessera::service {

void Leases::StartReaper() {
  if (options_.reaper_period <= absl::ZeroDuration() || reaper_.joinable()) {
    return;
  }
  reaper_ = std::thread([this] { RunReaper(); });
}

void Leases::StopReaper() {
  StopReaperThread();
  // A clean stop leaves the store as current as the heartbeats (a crash
  // loses at most one pass of them: the restart forgives that time anyway).
  SaveLiveness(Now());
}

bool Leases::SaveLiveness(absl::Time now) {
  UnsavedLiveness unsaved = liveness_.TakeUnsaved();
  const absl::Status saved = store_->SaveLiveness(unsaved.agents, unsaved.leases);
  if (saved.ok()) return true;
  outage_.StoreFailed(now, saved);
  options_.log.Warning(absl::StrCat("reaper: writing ", unsaved.agents.size(),
                                    " agents' heartbeats and ",
                                    unsaved.leases.size(),
                                    " lease extensions: ", saved.message()));
  liveness_.PutBack(std::move(unsaved));
  return false;
}

void Leases::StopReaperThread() {
  {
    absl::MutexLock lock(&reaper_mu_);
    stopping_ = true;
    reaper_wake_.SignalAll();
  }
  if (reaper_.joinable()) reaper_.join();
}

void Leases::RunReaper() {
  absl::Time last_pass = Now();
  while (true) {
    {
      absl::MutexLock lock(&reaper_mu_);
      reaper_wake_.WaitWithTimeout(&reaper_mu_, options_.reaper_period);
      if (stopping_) return;
    }
    // A pass this late means the process did not run (stopped, suspended,
    // starved): no agent could renew its lease meanwhile.
    const absl::Time now = Now();
    if (now - last_pass > StallAllowance()) {
      outage_.Stalled(now, now - last_pass);
    }
    last_pass = now;
    Reap();
  }
}

bool Leases::ForgiveOpenOutage(absl::Time now) {
  const std::optional<std::string> open = outage_.Open();
  if (!open.has_value()) return false;
  const absl::Duration grace = LeaseGraceAfterOutage(pace_.Current(now));
  const absl::StatusOr<int64_t> renewed =
      store_->ForgiveOutage(now, now + grace);
  if (!renewed.ok()) {
    // Still down: nothing may expire, and nothing can be written anyway.
    outage_.StoreFailed(now, renewed.status());
    return true;
  }
  outage_.Over(*open);
  liveness_.ForgiveAll(now);
  options_.log.Warning(absl::StrCat(
      "planner outage over (", *open, "): ", *renewed,
      " running trial(s) keep their lease for ",
      absl::FormatDuration(grace),
      " from now, and no agent is gone for the time it could not reach us"));
  return true;
}

std::vector<int64_t> Leases::EndGangsWithASilentMember(absl::Time now) {
  std::vector<int64_t> ended;
  db::TrialFilter leased;
  leased.statuses = {db::TrialState::kLeased};
  absl::StatusOr<std::vector<db::Trial>> trials = store_->ListTrials(leased);
  if (!trials.ok()) return ended;
  const absl::Duration silence = GangMemberSilence();
  for (const db::Trial& t : *trials) {
    if (t.gang_size < 2) continue;
    for (const std::string& member : t.lease_agent_ids) {
      // A member marked gone is the agent timeout's business.
      const std::optional<absl::Time> heard = liveness_.LastSeen(member);
      if (!heard.has_value() || now - *heard <= silence) continue;
      const absl::StatusOr<db::RequeueResult> end =
          store_->EndLeaseByInfrastructureFailure(
              t.id, member,
              absl::StrCat("gang member ", member, " sent no heartbeat for ",
                           absl::FormatDuration(absl::Trunc(
                               now - *heard, absl::Milliseconds(100))),
                           " (the others cannot go on without it)"));
      if (end.ok()) ended.push_back(t.id);
      break;
    }
  }
  return ended;
}

void Leases::Reap() {
  const absl::Time now = Now();
  // The lease clock stood still while the planner could not serve: the
  // leases are renewed first, and nothing expires in this pass.
  if (ForgiveOpenOutage(now)) {
    desk_->Tick(now);
    return;
  }
  // The store's lease expiries are what heartbeats extended only once
  // written; without that, nothing may expire.
  if (!SaveLiveness(now)) {
    desk_->Tick(now);
    return;
  }
  const Pace pace = pace_.Current(now);
  // Leases that expired: the trials run again (or crash out of attempts).
  std::set<int64_t> touched;  // trials whose lease ended
  absl::StatusOr<db::RequeueResult> expired = store_->RequeueExpiredLeases(now);
  if (!expired.ok()) {
    outage_.StoreFailed(now, expired.status());
    options_.log.Warning(absl::StrCat("reaper: re-queueing expired leases: ",
                                      expired.status().message()));
  } else {
    touched.insert(expired->requeued.begin(), expired->requeued.end());
    touched.insert(expired->crashed.begin(), expired->crashed.end());
    touched.insert(expired->cancelled.begin(), expired->cancelled.end());
  }
  // Gangs with a silent member: the others cannot go on without it.
  for (int64_t id : EndGangsWithASilentMember(now)) touched.insert(id);
  // Agents that stopped heartbeating (silent in memory; the store's
  // heartbeats are only as new as the last write).
  std::vector<std::string> lost;
  for (const std::string& id : liveness_.Silent(now, pace.agent_timeout)) {
    absl::Status gone = store_->MarkAgentGone(id);
    if (!gone.ok()) {
      outage_.StoreFailed(now, gone);
      options_.log.Warning(absl::StrCat("reaper: marking agent ", id,
                                        " gone: ", gone.message()));
      continue;  // tried again next pass
    }
    liveness_.Gone(id);
    absl::StatusOr<db::RequeueResult> requeued = store_->RequeueTrialsOf(id);
    options_.log.Info(absl::StrCat(
        "agent ", id, " sent no heartbeat for ",
        absl::FormatDuration(pace.agent_timeout), ": marked gone"));
    if (requeued.ok()) {
      touched.insert(requeued->requeued.begin(), requeued->requeued.end());
      touched.insert(requeued->crashed.begin(), requeued->crashed.end());
      touched.insert(requeued->cancelled.begin(), requeued->cancelled.end());
    }
    lost.push_back(id);
    absl::MutexLock lock(&mu_);
    idle_since_poll_.erase(id);
    pending_.erase(id);
  }
  for (int64_t trial_id : touched) {
    TrialLeaseEnded(trial_id);
    TellStudy(trial_id);
  }
  if (!lost.empty()) desk_->AgentsLost(lost, pace.agent_timeout);
  desk_->Tick(now);
}

}  // namespace tessera::service
