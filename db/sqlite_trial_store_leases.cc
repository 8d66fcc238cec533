// SqliteTrialStore: leasing trials to agents (gangs included), taking their
// reports exactly once, and ending leases that were lost.
#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "db/internal/list_queries.h"
#include "db/internal/rows.h"
#include "db/result_checksum.h"
#include "db/sqlite_trial_store.h"
#include "db/validation.h"

namespace tessera::db {

using internal::LoadAgent;
using internal::LoadStudy;
using internal::LoadTrial;
using internal::ToMicros;

namespace {

bool Holds(const Trial& trial, absl::string_view agent_id) {
  return std::find(trial.lease_agent_ids.begin(), trial.lease_agent_ids.end(),
                   agent_id) != trial.lease_agent_ids.end();
}

absl::Status NotHolder(const Trial& trial, absl::string_view agent_id,
                       absl::string_view why = "") {
  return absl::FailedPreconditionError(absl::StrCat(
      "trial ", trial.id, ": agent ", agent_id, " does not hold its lease (",
      TrialStateName(trial.status),
      trial.lease_agent_ids.empty()
          ? ""
          : absl::StrCat(", held by ",
                         absl::StrJoin(trial.lease_agent_ids, ", ")),
      why.empty() ? "" : absl::StrCat("; ", why), ")"));
}

// Who held the lease that was just lost (`agents` empty: nobody may report
// the trial late).
absl::Status SetLostLeaseAgents(Database& db, int64_t trial_id,
                                const std::vector<std::string>& agents) {
  TESSERA_ASSIGN_OR_RETURN(
      Statement update,
      db.Prepare("UPDATE trials SET lost_lease_agents = ? WHERE id = ?"));
  update.BindText(1, absl::StrJoin(agents, ",")).BindInt(2, trial_id);
  return update.Run();
}

absl::Status DeleteLease(Database& db, int64_t trial_id) {
  TESSERA_ASSIGN_OR_RETURN(
      Statement erase,
      db.Prepare("DELETE FROM trial_leases WHERE trial_id = ?"));
  erase.BindInt(1, trial_id);
  return erase.Run();
}

// A finite value, else NULL (sqlite would store an infinity as is).
std::optional<double> Finite(double value) {
  if (std::isfinite(value)) return value;
  return std::nullopt;
}

// The result's columns, JSON and the trial's new state.
absl::Status StoreResult(Database& db, int64_t trial_id,
                         absl::string_view agent_id, const TrialResult& r,
                         absl::Time now) {
  // Invalid UTF-8 (a crash's stderr tail) is replaced, not an exception.
  const std::string json = TrialResultToJson(r).dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  int64_t peak_memory_bytes = 0;
  for (int64_t bytes : r.peak_memory_bytes) {
    peak_memory_bytes = std::max(peak_memory_bytes, bytes);
  }
  TESSERA_ASSIGN_OR_RETURN(
      Statement update,
      db.Prepare(
          "UPDATE trials SET status = ?, reason = ?, reported_by = ?, "
          "result_json = ?, backend = ?, device = ?, ranks = ?, "
          "measured_steps = ?, step_time_s = ?, step_time_p10_s = ?, "
          "step_time_p90_s = ?, tokens_per_s = ?, tokens_per_s_per_gpu = ?, "
          "tflops_per_gpu = ?, mfu = ?, peak_memory_bytes = ?, compute_s = ?, "
          "comm_s = ?, exposed_comm_s = ?, watts_per_gpu = ?, "
          "tokens_per_joule = ?, finished_at_us = ?, "
          "lease_expires_at_us = NULL WHERE id = ?"));
  update.BindText(1, TrialStateName(StateOfResult(r.status)))
      .BindText(2, r.reason)
      .BindText(3, agent_id)
      .BindText(4, json)
      .BindText(5, r.backend)
      .BindText(6, r.device)
      .BindInt(7, r.ranks)
      .BindInt(8, r.steps)
      .BindDouble(9, r.step_time_s.median)
      .BindDouble(10, r.step_time_s.p10)
      .BindDouble(11, r.step_time_s.p90)
      .BindDouble(12, r.tokens_per_s)
      .BindDouble(13, r.tokens_per_s_per_gpu)
      .BindDouble(14, r.tflops_per_gpu)
      .BindDouble(15, r.mfu)
      .BindInt(16, peak_memory_bytes)
      .BindDouble(17, r.compute_s)
      .BindDouble(18, r.comm_s)
      .BindDouble(19, r.exposed_comm_s)
      .BindOptionalDouble(20, r.watts_per_gpu)
      .BindOptionalDouble(21, r.tokens_per_joule)
      .BindInt(22, ToMicros(now))
      .BindInt(23, trial_id);
  TESSERA_RETURN_IF_ERROR(update.Run());
  return SealResult(db, trial_id);
}

// One trial_metrics row per step of the loss and step-time series.
absl::Status StoreMetrics(Database& db, int64_t trial_id,
                          const TrialResult& r) {
  TESSERA_ASSIGN_OR_RETURN(
      Statement insert,
      db.Prepare("INSERT INTO trial_metrics (trial_id, step, loss, "
                 "step_time_s) VALUES (?, ?, ?, ?)"));
  const size_t steps = std::max(r.loss.size(), r.step_times_s.size());
  for (size_t i = 0; i < steps; ++i) {
    insert.BindInt(1, trial_id)
        .BindInt(2, static_cast<int64_t>(i))
        .BindOptionalDouble(
            3, i < r.loss.size() ? Finite(r.loss[i]) : std::nullopt)
        .BindOptionalDouble(4, i < r.step_times_s.size()
                                   ? Finite(r.step_times_s[i])
                                   : std::nullopt);
    TESSERA_RETURN_IF_ERROR(insert.Run());
    insert.Reset();
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SqliteTrialStore::LeaseTrial(
    int64_t trial_id, const std::vector<std::string>& agent_ids,
    absl::Time expires_at) {
  TESSERA_RETURN_IF_ERROR(ValidateLeaseAgents(agent_ids));
  return Write([&](Database& db) -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(const Trial trial, LoadTrial(db, trial_id));
    TESSERA_ASSIGN_OR_RETURN(const Study study, LoadStudy(db, trial.study_id));
    if (IsFinal(study.status)) {
      return absl::FailedPreconditionError(
          absl::StrCat("trial ", trial_id, ": its study ", study.id, " is ",
                       StudyStatusName(study.status)));
    }
    if (trial.status != TrialState::kQueued) {
      return absl::FailedPreconditionError(
          absl::StrCat("trial ", trial_id, ": is ",
                       TrialStateName(trial.status), ", not queued"));
    }
    if (static_cast<int64_t>(agent_ids.size()) != trial.gang_size) {
      return absl::InvalidArgumentError(
          absl::StrCat("lease.agent_ids: trial ", trial_id, " needs a gang of ",
                       trial.gang_size, " agents, got ", agent_ids.size()));
    }
    for (const std::string& id : agent_ids) {
      TESSERA_ASSIGN_OR_RETURN(const Agent agent, LoadAgent(db, id));
      if (agent.state != AgentState::kActive) {
        return absl::FailedPreconditionError(
            absl::StrCat("agent ", id, ": is gone; it must register again"));
      }
    }
    TESSERA_ASSIGN_OR_RETURN(
        Statement update,
        db.Prepare("UPDATE trials SET status = 'leased', reason = '', "
                   "lease_expires_at_us = ?, started_at_us = ?, "
                   "lost_lease_agents = '' WHERE id = ?"));
    update.BindInt(1, ToMicros(expires_at))
        .BindInt(2, ToMicros(Now()))
        .BindInt(3, trial_id);
    TESSERA_RETURN_IF_ERROR(update.Run());
    TESSERA_ASSIGN_OR_RETURN(
        Statement insert,
        db.Prepare("INSERT INTO trial_leases (trial_id, agent_id, gang_rank) "
                   "VALUES (?, ?, ?)"));
    for (size_t rank = 0; rank < agent_ids.size(); ++rank) {
      insert.BindInt(1, trial_id)
          .BindText(2, agent_ids[rank])
          .BindInt(3, static_cast<int64_t>(rank));
      TESSERA_RETURN_IF_ERROR(insert.Run());
      insert.Reset();
    }
    return absl::OkStatus();
  });
}

absl::Status SqliteTrialStore::ExtendLease(int64_t trial_id,
                                           absl::string_view agent_id,
                                           absl::Time expires_at) {
  TESSERA_RETURN_IF_ERROR(ValidateAgentId(agent_id, "lease.agent_id"));
  return Write([&](Database& db) -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(const Trial trial, LoadTrial(db, trial_id));
    if (!Holds(trial, agent_id)) return NotHolder(trial, agent_id);
    TESSERA_ASSIGN_OR_RETURN(
        Statement update,
        db.Prepare("UPDATE trials SET lease_expires_at_us = ? WHERE id = ?"));
    update.BindInt(1, ToMicros(expires_at)).BindInt(2, trial_id);
    return update.Run();
  });
}

absl::StatusOr<std::vector<int64_t>> SqliteTrialStore::ExtendLeasesOf(
    absl::string_view agent_id, absl::Time expires_at) {
  TESSERA_RETURN_IF_ERROR(ValidateAgentId(agent_id, "agent.id"));
  std::vector<int64_t> held;
  const absl::Status done = Write(
      [&](Database& db) -> absl::Status {
        held.clear();
        TESSERA_RETURN_IF_ERROR(LoadAgent(db, agent_id).status());
        {
          TESSERA_ASSIGN_OR_RETURN(
              Statement select,
              db.Prepare("SELECT trial_id FROM trial_leases WHERE agent_id = ? "
                         "ORDER BY trial_id"));
          select.BindText(1, agent_id);
          while (true) {
            TESSERA_ASSIGN_OR_RETURN(const bool row, select.Step());
            if (!row) break;
            held.push_back(select.ColumnInt(0));
          }
        }
        TESSERA_ASSIGN_OR_RETURN(
            Statement update,
            db.Prepare(
                "UPDATE trials SET lease_expires_at_us = ? WHERE id IN "
                "(SELECT trial_id FROM trial_leases WHERE agent_id = ?)"));
        update.BindInt(1, ToMicros(expires_at)).BindText(2, agent_id);
        return update.Run();
      },
      Synchronous::kNormal);  // see "Durability" in sqlite_trial_store.h
  if (!done.ok()) return done;
  return held;
}

absl::Status SqliteTrialStore::ReleaseLease(int64_t trial_id,
                                            absl::string_view agent_id,
                                            absl::string_view reason) {
  TESSERA_RETURN_IF_ERROR(ValidateAgentId(agent_id, "release.agent_id"));
  return Write([&](Database& db) -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(const Trial trial, LoadTrial(db, trial_id));
    if (!Holds(trial, agent_id)) return NotHolder(trial, agent_id);
    TESSERA_ASSIGN_OR_RETURN(const Study study, LoadStudy(db, trial.study_id));
    const bool cancel = IsFinal(study.status);
    TESSERA_ASSIGN_OR_RETURN(
        Statement update,
        db.Prepare("UPDATE trials SET status = ?, reason = ?, "
                   "lease_expires_at_us = NULL, started_at_us = ?, "
                   "finished_at_us = ? WHERE id = ?"));
    update
        .BindText(1, TrialStateName(cancel ? TrialState::kCancelled
                                           : TrialState::kQueued))
        .BindText(2, absl::StrCat("handed back by agent ", agent_id,
                                  reason.empty() ? "" : ": ", reason,
                                  cancel ? " (study is final: cancelled)" : ""))
        .BindInt(5, trial_id);
    if (cancel) {
      update
          .BindOptionalInt(3, trial.started_at.has_value()
                                  ? std::optional(ToMicros(*trial.started_at))
                                  : std::nullopt)
          .BindInt(4, ToMicros(Now()));
    } else {
      update.BindNull(3).BindNull(4);
    }
    TESSERA_RETURN_IF_ERROR(update.Run());
    return DeleteLease(db, trial_id);
  });
}

absl::Status SqliteTrialStore::ReportTrial(int64_t trial_id,
                                           absl::string_view agent_id,
                                           const TrialResult& result,
                                           absl::Time now) {
  TESSERA_RETURN_IF_ERROR(ValidateAgentId(agent_id, "report.agent_id"));
  return Write([&](Database& db) -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(const Trial trial, LoadTrial(db, trial_id));
    // First: a retried report (or a gang's second) finds the stored result.
    if (!trial.reported_by.empty()) {
      return absl::AlreadyExistsError(
          absl::StrCat("trial ", trial_id, ": result already reported by ",
                       trial.reported_by));
    }
    if (!Holds(trial, agent_id)) {
      // A late report: its lease was lost (the planner did not hear the
      // agent in time) but nothing ran the trial since. The result is as
      // good as an on-time one, and the lost lease was not lost after all.
      TESSERA_ASSIGN_OR_RETURN(const Study study, LoadStudy(db, trial.study_id));
      const bool late_holder =
          std::find(trial.lost_lease_agent_ids.begin(),
                    trial.lost_lease_agent_ids.end(),
                    agent_id) != trial.lost_lease_agent_ids.end();
      if (!late_holder || IsFinal(study.status) ||
          (trial.status != TrialState::kQueued &&
           trial.status != TrialState::kCrash)) {
        return NotHolder(trial, agent_id,
                         late_holder && IsFinal(study.status)
                             ? absl::StrCat("its lease was lost and study ",
                                            study.id, " is ",
                                            StudyStatusName(study.status))
                             : "");
      }
      TESSERA_ASSIGN_OR_RETURN(
          Statement give_back,
          db.Prepare("UPDATE trials SET attempts = MAX(attempts - 1, 0) "
                     "WHERE id = ?"));
      give_back.BindInt(1, trial_id);
      TESSERA_RETURN_IF_ERROR(give_back.Run());
    }
    TESSERA_RETURN_IF_ERROR(StoreResult(db, trial_id, agent_id, result, now));
    TESSERA_RETURN_IF_ERROR(DeleteLease(db, trial_id));
    TESSERA_RETURN_IF_ERROR(SetLostLeaseAgents(db, trial_id, {}));
    return StoreMetrics(db, trial_id, result);
  });
}

absl::Status SqliteTrialStore::EndLostLease(Database& db, int64_t trial_id,
                                            absl::string_view why,
                                            RequeueResult& result) {
  TESSERA_ASSIGN_OR_RETURN(const Trial trial, LoadTrial(db, trial_id));
  TESSERA_ASSIGN_OR_RETURN(const Study study, LoadStudy(db, trial.study_id));
  const int64_t now_us = ToMicros(Now());
  if (IsFinal(study.status)) {
    // Nothing may run it again (as ReleaseLease): cancelled, no attempt.
    TESSERA_ASSIGN_OR_RETURN(
        Statement cancel,
        db.Prepare("UPDATE trials SET status = ?, reason = ?, "
                   "lease_expires_at_us = NULL, finished_at_us = ? "
                   "WHERE id = ?"));
    cancel.BindText(1, TrialStateName(TrialState::kCancelled))
        .BindText(2, absl::StrCat(why, " (study is final: cancelled)"))
        .BindInt(3, now_us)
        .BindInt(4, trial_id);
    TESSERA_RETURN_IF_ERROR(cancel.Run());
    TESSERA_RETURN_IF_ERROR(DeleteLease(db, trial_id));
    result.cancelled.push_back(trial_id);
    return absl::OkStatus();
  }
  const int64_t attempts = trial.attempts + 1;
  const bool give_up = attempts >= options_.max_attempts;
  TESSERA_ASSIGN_OR_RETURN(
      Statement update,
      db.Prepare("UPDATE trials SET status = ?, reason = ?, attempts = ?, "
                 "lease_expires_at_us = NULL, started_at_us = ?, "
                 "finished_at_us = ? WHERE id = ?"));
  if (give_up) {
    update.BindText(1, TrialStateName(TrialState::kCrash))
        .BindText(2, absl::StrCat("gave up after ", attempts,
                                  " lost leases; the last: ", why))
        .BindOptionalInt(4, trial.started_at.has_value()
                                ? std::optional(ToMicros(*trial.started_at))
                                : std::nullopt)
        .BindInt(5, now_us);
  } else {
    update.BindText(1, TrialStateName(TrialState::kQueued))
        .BindText(2, absl::StrCat("re-queued after lost lease ", attempts,
                                  " of ", options_.max_attempts, ": ", why))
        .BindNull(4)
        .BindNull(5);
  }
  update.BindInt(3, attempts).BindInt(6, trial_id);
  TESSERA_RETURN_IF_ERROR(update.Run());
  TESSERA_RETURN_IF_ERROR(DeleteLease(db, trial_id));
  TESSERA_RETURN_IF_ERROR(
      SetLostLeaseAgents(db, trial_id, trial.lease_agent_ids));
  (give_up ? result.crashed : result.requeued).push_back(trial_id);
  return absl::OkStatus();
}

absl::StatusOr<RequeueResult> SqliteTrialStore::EndLeaseByInfrastructureFailure(
    int64_t trial_id, absl::string_view agent_id, absl::string_view reason) {
  TESSERA_RETURN_IF_ERROR(ValidateAgentId(agent_id, "release.agent_id"));
  RequeueResult result;
  const absl::Status done = Write([&](Database& db) -> absl::Status {
    result = {};
    TESSERA_ASSIGN_OR_RETURN(const Trial trial, LoadTrial(db, trial_id));
    if (!Holds(trial, agent_id)) return NotHolder(trial, agent_id);
    return EndLostLease(db, trial_id,
                        absl::StrCat("infrastructure failure on agent ",
                                     agent_id, ": ", reason),
                        result);
  });
  if (!done.ok()) return done;
  return result;
}

absl::StatusOr<std::vector<HeldLease>> SqliteTrialStore::ListLeasesHeldBy(
    absl::string_view agent_id) {
  TESSERA_RETURN_IF_ERROR(ValidateAgentId(agent_id, "agent.id"));
  std::vector<HeldLease> held;
  const absl::Status done = Read([&](Database& db) -> absl::Status {
    held.clear();
    const internal::SqlQuery query = internal::LeasesHeldByQuery(agent_id);
    TESSERA_ASSIGN_OR_RETURN(Statement select, db.Prepare(query.sql));
    internal::BindAll(query.params, select);
    while (true) {
      TESSERA_ASSIGN_OR_RETURN(const bool row, select.Step());
      if (!row) return absl::OkStatus();
      HeldLease lease;
      lease.trial_id = select.ColumnInt(0);
      lease.study_id = select.ColumnInt(1);
      lease.gang_size = select.ColumnInt(2);
      if (std::optional<int64_t> us = select.ColumnOptionalInt(3)) {
        lease.started_at = internal::FromMicros(*us);
      }
      if (std::optional<int64_t> us = select.ColumnOptionalInt(4)) {
        lease.expires_at = internal::FromMicros(*us);
      }
      held.push_back(lease);
    }
  });
  if (!done.ok()) return done;
  return held;
}

absl::StatusOr<std::vector<Trial>> SqliteTrialStore::ListQueuedTrials(
    const std::vector<int64_t>& study_ids, int64_t limit,
    const std::vector<int64_t>& passed_over) {
  TESSERA_ASSIGN_OR_RETURN(
      const internal::SqlQuery query,
      internal::QueuedTrialsQuery(study_ids, limit, passed_over));
  if (study_ids.empty()) return std::vector<Trial>{};
  return ReadTrials(query);
}

absl::StatusOr<RequeueResult> SqliteTrialStore::RequeueExpiredLeases(
    absl::Time now) {
  RequeueResult result;
  const absl::Status done = Write([&](Database& db) -> absl::Status {
    result = {};
    std::vector<std::pair<int64_t, std::string>> expired;  // id, holders
    {
      TESSERA_ASSIGN_OR_RETURN(
          Statement select,
          db.Prepare("SELECT t.id, (SELECT group_concat(agent_id, ', ') FROM "
                     "trial_leases l WHERE l.trial_id = t.id) FROM trials t "
                     "WHERE t.status = 'leased' AND t.lease_expires_at_us <= ? "
                     "ORDER BY t.id"));
      select.BindInt(1, ToMicros(now));
      while (true) {
        TESSERA_ASSIGN_OR_RETURN(const bool row, select.Step());
        if (!row) break;
        expired.emplace_back(select.ColumnInt(0), select.ColumnText(1));
      }
    }
    for (const auto& [id, holders] : expired) {
      TESSERA_RETURN_IF_ERROR(EndLostLease(
          db, id, absl::StrCat("lease expired (agents ", holders, ")"),
          result));
    }
    return absl::OkStatus();
  });
  if (!done.ok()) return done;
  return result;
}

absl::StatusOr<RequeueResult> SqliteTrialStore::RequeueTrialsOf(
    absl::string_view agent_id) {
  TESSERA_RETURN_IF_ERROR(ValidateAgentId(agent_id, "agent.id"));
  RequeueResult result;
  const absl::Status done = Write([&](Database& db) -> absl::Status {
    result = {};
    TESSERA_RETURN_IF_ERROR(LoadAgent(db, agent_id).status());
    std::vector<int64_t> held;
    {
      TESSERA_ASSIGN_OR_RETURN(
          Statement select,
          db.Prepare("SELECT trial_id FROM trial_leases WHERE agent_id = ? "
                     "ORDER BY trial_id"));
      select.BindText(1, agent_id);
      while (true) {
        TESSERA_ASSIGN_OR_RETURN(const bool row, select.Step());
        if (!row) break;
        held.push_back(select.ColumnInt(0));
      }
    }
    for (int64_t id : held) {
      TESSERA_RETURN_IF_ERROR(EndLostLease(
          db, id, absl::StrCat("agent ", agent_id, " stopped"), result));
    }
    return absl::OkStatus();
  });
  if (!done.ok()) return done;
  return result;
}

absl::StatusOr<int64_t> SqliteTrialStore::ForgiveOutage(
    absl::Time now, absl::Time lease_expires_at) {
  int64_t extended = 0;
  const absl::Status done = Write([&](Database& db) -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(
        Statement leases,
        db.Prepare("UPDATE trials SET lease_expires_at_us = ? WHERE status = "
                   "'leased' AND lease_expires_at_us < ?"));
    leases.BindInt(1, ToMicros(lease_expires_at))
        .BindInt(2, ToMicros(lease_expires_at));
    TESSERA_RETURN_IF_ERROR(leases.Run());
    extended = db.Changes();
    TESSERA_ASSIGN_OR_RETURN(
        Statement agents,
        db.Prepare("UPDATE agents SET last_heartbeat_at_us = ? WHERE state = "
                   "'active' AND last_heartbeat_at_us < ?"));
    agents.BindInt(1, ToMicros(now)).BindInt(2, ToMicros(now));
    return agents.Run();
  });
  if (!done.ok()) return done;
  return extended;
}

absl::StatusOr<int64_t> SqliteTrialStore::CancelQueuedTrials(int64_t study_id) {
  int64_t cancelled = 0;
  const absl::Status done = Write([&](Database& db) -> absl::Status {
    TESSERA_RETURN_IF_ERROR(LoadStudy(db, study_id).status());
    TESSERA_ASSIGN_OR_RETURN(
        Statement update,
        db.Prepare("UPDATE trials SET status = 'cancelled', "
                   "reason = 'cancelled before it ran', finished_at_us = ? "
                   "WHERE study_id = ? AND status = 'queued'"));
    update.BindInt(1, ToMicros(Now())).BindInt(2, study_id);
    TESSERA_RETURN_IF_ERROR(update.Run());
    cancelled = db.Changes();
    return absl::OkStatus();
  });
  if (!done.ok()) return done;
  return cancelled;
}

absl::Status SqliteTrialStore::InvalidateTrial(int64_t trial_id,
                                               absl::string_view reason) {
  if (reason.empty()) {
    return absl::InvalidArgumentError(
        "reason: say why the trial's result is wrong");
  }
  return Write([&](Database& db) -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(const Trial trial, LoadTrial(db, trial_id));
    if (!IsFinal(trial.status)) {
      return absl::FailedPreconditionError(
          absl::StrCat("trial ", trial_id, " is ", TrialStateName(trial.status),
                       ": only a finished trial's result can be invalidated"));
    }
    TESSERA_ASSIGN_OR_RETURN(
        Statement update,
        db.Prepare("UPDATE trials SET status = 'invalid', reason = ? "
                   "WHERE id = ?"));
    update.BindText(1, absl::StrCat("invalidated: ", reason))
        .BindInt(2, trial_id);
    TESSERA_RETURN_IF_ERROR(update.Run());
    return SealResult(db, trial_id);
  });
}

}  // namespace tessera::db
