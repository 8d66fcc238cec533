// SqliteTrialStore: adding trials and reading them back (one study's or the
// history across studies), their counts and per-step metrics.
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/layout_json.h"
#include "core/status_macros.h"
#include "db/internal/list_queries.h"
#include "db/internal/rows.h"
#include "db/sqlite_trial_store.h"
#include "db/validation.h"

namespace tessera::db {

using internal::LoadStudy;
using internal::LoadTrial;
using internal::ToMicros;

absl::StatusOr<std::vector<int64_t>> SqliteTrialStore::AddTrials(
    int64_t study_id, const std::vector<NewTrial>& trials) {
  for (size_t i = 0; i < trials.size(); ++i) {
    TESSERA_RETURN_IF_ERROR(
        ValidateNewTrial(trials[i], absl::StrCat("trials[", i, "]")));
  }
  std::vector<int64_t> ids;
  const absl::Status done = Write([&](Database& db) -> absl::Status {
    ids.clear();
    TESSERA_ASSIGN_OR_RETURN(const Study study, LoadStudy(db, study_id));
    if (IsFinal(study.status)) {
      return absl::FailedPreconditionError(
          absl::StrCat("study ", study_id, ": is ",
                       StudyStatusName(study.status), "; no trials to add"));
    }
    const int64_t now_us = ToMicros(Now());
    TESSERA_ASSIGN_OR_RETURN(
        Statement insert,
        db.Prepare(
            "INSERT INTO trials (study_id, layout_json, tp, sp, pp, vpp, cp, "
            "dp, zero, shard_group, micro_batch, grad_accum, recompute, rung, "
            "steps, warmup_steps, gang_size, status, predicted_tokens_per_s, "
            "predicted_tokens_per_joule, predicted_step_time_s, "
            "predicted_peak_memory_bytes, created_at_us) VALUES (?, ?, ?, ?, "
            "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?)"));
    for (const NewTrial& t : trials) {
      const Layout& l = t.layout;
      insert.BindInt(1, study_id)
          .BindText(2, LayoutToJson(l).dump())
          .BindInt(3, l.tp)
          .BindInt(4, l.sp ? 1 : 0)
          .BindInt(5, l.pp)
          .BindInt(6, l.vpp)
          .BindInt(7, l.cp)
          .BindInt(8, l.dp)
          .BindInt(9, l.zero)
          .BindInt(10, l.shard_group)
          .BindInt(11, l.micro_batch)
          .BindInt(12, l.grad_accum)
          .BindText(13, RecomputeName(l.recompute))
          .BindInt(14, t.rung)
          .BindInt(15, t.steps)
          .BindInt(16, t.warmup_steps)
          .BindInt(17, t.gang_size)
          .BindInt(22, now_us);
      if (t.predicted.has_value()) {
        insert.BindDouble(18, t.predicted->tokens_per_s)
            .BindDouble(19, t.predicted->tokens_per_joule)
            .BindDouble(20, t.predicted->step_time_s)
            .BindInt(21, t.predicted->peak_memory_bytes);
      }
      TESSERA_RETURN_IF_ERROR(insert.Run());
      ids.push_back(db.LastInsertRowId());
      insert.Reset();
    }
    return absl::OkStatus();
  });
  if (!done.ok()) return done;
  return ids;
}

absl::StatusOr<Trial> SqliteTrialStore::GetTrial(int64_t trial_id) {
  Trial trial;
  const absl::Status done = Read([&](Database& db) -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(trial, LoadTrial(db, trial_id));
    return absl::OkStatus();
  });
  if (!done.ok()) return done;
  return trial;
}

absl::StatusOr<std::vector<Trial>> SqliteTrialStore::ListTrials(
    const TrialFilter& filter) {
  TESSERA_ASSIGN_OR_RETURN(const internal::SqlQuery query,
                           internal::TrialListQuery(filter));
  return ReadTrials(query);
}

absl::StatusOr<std::vector<Trial>> SqliteTrialStore::ReadTrials(
    const internal::SqlQuery& query) {
  std::vector<Trial> trials;
  const absl::Status done = Read([&](Database& db) -> absl::Status {
    trials.clear();
    TESSERA_ASSIGN_OR_RETURN(Statement select, db.Prepare(query.sql));
    internal::BindAll(query.params, select);
    while (true) {
      TESSERA_ASSIGN_OR_RETURN(const bool row, select.Step());
      if (!row) return absl::OkStatus();
      TESSERA_ASSIGN_OR_RETURN(Trial trial, internal::ReadTrial(select));
      trials.push_back(std::move(trial));
    }
  });
  if (!done.ok()) return done;
  return trials;
}

absl::StatusOr<std::map<TrialState, int64_t>>
SqliteTrialStore::CountTrialsByStatus(int64_t study_id) {
  std::map<TrialState, int64_t> counts;
  const absl::Status done = Read([&](Database& db) -> absl::Status {
    counts.clear();
    for (TrialState state : AllTrialStates()) counts[state] = 0;
    TESSERA_RETURN_IF_ERROR(LoadStudy(db, study_id).status());
    TESSERA_ASSIGN_OR_RETURN(
        Statement select,
        db.Prepare("SELECT status, count(*) FROM trials WHERE study_id = ? "
                   "GROUP BY status"));
    select.BindInt(1, study_id);
    while (true) {
      TESSERA_ASSIGN_OR_RETURN(const bool row, select.Step());
      if (!row) return absl::OkStatus();
      absl::StatusOr<TrialState> state = ParseTrialState(select.ColumnText(0));
      if (!state.ok()) return absl::DataLossError(state.status().message());
      counts[*state] = select.ColumnInt(1);
    }
  });
  if (!done.ok()) return done;
  return counts;
}

absl::StatusOr<std::vector<TrialMetric>> SqliteTrialStore::GetTrialMetrics(
    int64_t trial_id) {
  std::vector<TrialMetric> metrics;
  const absl::Status done = Read([&](Database& db) -> absl::Status {
    metrics.clear();
    {
      TESSERA_ASSIGN_OR_RETURN(Statement exists,
                               db.Prepare("SELECT 1 FROM trials WHERE id = ?"));
      exists.BindInt(1, trial_id);
      TESSERA_ASSIGN_OR_RETURN(const bool found, exists.Step());
      if (!found) {
        return absl::NotFoundError(
            absl::StrCat("trial ", trial_id, ": not found"));
      }
    }
    TESSERA_ASSIGN_OR_RETURN(
        Statement select,
        db.Prepare("SELECT step, loss, step_time_s FROM trial_metrics "
                   "WHERE trial_id = ? ORDER BY step"));
    select.BindInt(1, trial_id);
    while (true) {
      TESSERA_ASSIGN_OR_RETURN(const bool row, select.Step());
      if (!row) return absl::OkStatus();
      metrics.push_back({trial_id, select.ColumnInt(0), select.ColumnDouble(1),
                         select.ColumnDouble(2)});
    }
  });
  if (!done.ok()) return done;
  return metrics;
}

}  // namespace tessera::db
