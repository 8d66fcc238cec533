#include "db/internal/list_queries.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "db/internal/rows.h"
#include "db/validation.h"

namespace tessera::db::internal {
namespace {

// Collects WHERE conditions and their parameters.
class Conditions {
 public:
  void Add(absl::string_view condition, SqlValue value) {
    conditions_.emplace_back(condition);
    params_.push_back(std::move(value));
  }
  template <typename T>
  void AddIf(absl::string_view condition, const std::optional<T>& value) {
    if (value.has_value()) Add(condition, static_cast<int64_t>(*value));
  }
  // `column` IN (?, ?, ...) over the names of `values`, when there are any.
  template <typename Enum, typename NameFn>
  void AddIn(absl::string_view column, const std::vector<Enum>& values,
             NameFn name) {
    if (values.empty()) return;
    std::vector<std::string> marks;
    for (const Enum& v : values) {
      marks.emplace_back("?");
      params_.push_back(std::string(name(v)));
    }
    conditions_.push_back(
        absl::StrCat(column, " IN (", absl::StrJoin(marks, ", "), ")"));
  }
  void AddRange(absl::string_view column, const TimeRange& range) {
    if (range.begin.has_value()) {
      Add(absl::StrCat(column, " >= ?"), ToMicros(*range.begin));
    }
    if (range.end.has_value()) {
      Add(absl::StrCat(column, " < ?"), ToMicros(*range.end));
    }
  }
  std::string Where() const {
    if (conditions_.empty()) return "";
    return absl::StrCat(" WHERE ", absl::StrJoin(conditions_, " AND "));
  }
  std::vector<SqlValue>& params() { return params_; }

 private:
  std::vector<std::string> conditions_;
  std::vector<SqlValue> params_;
};

struct SortColumn {
  const char* key;
  const char* column;
  bool nullable;
};

// TrialSortKeys() and the columns they sort by.
constexpr SortColumn kSortColumns[] = {
    {"id", "t.id", false},
    {"created_at", "t.created_at_us", false},
    {"finished_at", "t.finished_at_us", true},
    {"rung", "t.rung", false},
    {"attempts", "t.attempts", false},
    {"tokens_per_s", "t.tokens_per_s", true},
    {"tokens_per_s_per_gpu", "t.tokens_per_s_per_gpu", true},
    {"tokens_per_joule", "t.tokens_per_joule", true},
    {"step_time_s", "t.step_time_s", true},
    {"tflops_per_gpu", "t.tflops_per_gpu", true},
    {"mfu", "t.mfu", true},
    {"peak_memory_bytes", "t.peak_memory_bytes", true},
    {"watts_per_gpu", "t.watts_per_gpu", true},
    {"exposed_comm_s", "t.exposed_comm_s", true},
    {"predicted_tokens_per_s", "t.predicted_tokens_per_s", true},
    {"predicted_tokens_per_joule", "t.predicted_tokens_per_joule", true},
    {"predicted_step_time_s", "t.predicted_step_time_s", true},
};

std::string OrderBy(const TrialFilter& f) {
  const char* direction = f.descending ? " DESC" : "";
  // With a time range, sqlite (without statistics) would rather walk the
  // whole table in id order than search the time index and sort; the unary
  // + takes the id order away from it, so the range uses its index.
  const bool time_range =
      f.created.begin || f.created.end || f.finished.begin || f.finished.end;
  for (const SortColumn& s : kSortColumns) {
    if (f.sort_by != s.key) continue;
    const bool by_id = f.sort_by == "id";
    std::string order = absl::StrCat(
        " ORDER BY ", by_id && time_range ? "+" : "", s.column, direction);
    if (s.nullable) absl::StrAppend(&order, " NULLS LAST");
    if (!by_id) {
      absl::StrAppend(&order, ", t.id", direction);
    }
    return order;
  }
  return " ORDER BY t.id";  // unreachable: the filter was validated
}

void AddLayoutConditions(const LayoutFilter& l, Conditions& where) {
  where.AddIf("t.tp = ?", l.tp);
  where.AddIf("t.sp = ?", l.sp);
  where.AddIf("t.pp = ?", l.pp);
  where.AddIf("t.vpp = ?", l.vpp);
  where.AddIf("t.cp = ?", l.cp);
  where.AddIf("t.dp = ?", l.dp);
  where.AddIf("t.zero = ?", l.zero);
  where.AddIf("t.shard_group = ?", l.shard_group);
  where.AddIf("t.micro_batch = ?", l.micro_batch);
  where.AddIf("t.grad_accum = ?", l.grad_accum);
  if (l.recompute.has_value()) {
    where.Add("t.recompute = ?", std::string(RecomputeName(*l.recompute)));
  }
}

}  // namespace

void BindAll(const std::vector<SqlValue>& params, Statement& stmt) {
  for (size_t i = 0; i < params.size(); ++i) {
    const int index = static_cast<int>(i) + 1;
    if (params[i].is_text) {
      stmt.BindText(index, params[i].text);
    } else {
      stmt.BindInt(index, params[i].number);
    }
  }
}

absl::StatusOr<SqlQuery> TrialListQuery(const TrialFilter& f) {
  TESSERA_RETURN_IF_ERROR(ValidateTrialFilter(f));
  Conditions where;
  where.AddIf("t.study_id = ?", f.study_id);
  where.AddIn("t.status", f.statuses, TrialStateName);
  // The study's fields: a join only when asked for.
  const bool join = !f.model.empty() || !f.gpu.empty() || f.nodes.has_value() ||
                    f.gpus_per_node.has_value();
  if (!f.model.empty()) where.Add("s.model = ?", f.model);
  if (!f.gpu.empty()) where.Add("s.gpu = ?", f.gpu);
  where.AddIf("s.nodes = ?", f.nodes);
  where.AddIf("s.gpus_per_node = ?", f.gpus_per_node);
  AddLayoutConditions(f.layout, where);
  where.AddIf("t.rung = ?", f.rung);
  if (!f.leased_to.empty()) {
    where.Add("t.id IN (SELECT trial_id FROM trial_leases WHERE agent_id = ?)",
              f.leased_to);
  }
  where.AddRange("t.created_at_us", f.created);
  where.AddRange("t.finished_at_us", f.finished);

  SqlQuery q;
  q.sql = absl::StrCat("SELECT ", kTrialColumns, " FROM trials t",
                       join ? " JOIN studies s ON s.id = t.study_id" : "",
                       where.Where(), OrderBy(f));
  q.params = std::move(where.params());
  if (f.limit > 0 || f.offset > 0) {
    absl::StrAppend(&q.sql, " LIMIT ? OFFSET ?");
    q.params.push_back(f.limit > 0 ? f.limit : int64_t{-1});
    q.params.push_back(f.offset);
  }
  return q;
}

absl::StatusOr<SqlQuery> QueuedTrialsQuery(
    const std::vector<int64_t>& study_ids, int64_t limit,
    const std::vector<int64_t>& passed_over) {
  if (limit < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("queued.limit: must be positive, got ", limit));
  }
  SqlQuery q;
  q.sql = absl::StrCat(
      "SELECT ", kTrialColumns,
      " FROM trials t WHERE t.status = 'queued' AND t.study_id IN "
      "(SELECT value FROM json_each(?1)) AND t.id NOT IN "
      "(SELECT value FROM json_each(?3)) ORDER BY t.study_id, t.rung, "
      "t.predicted_tokens_per_s DESC, t.id LIMIT ?2");
  q.params = {absl::StrCat("[", absl::StrJoin(study_ids, ","), "]"), limit,
              absl::StrCat("[", absl::StrJoin(passed_over, ","), "]")};
  return q;
}

SqlQuery LeasesHeldByQuery(absl::string_view agent_id) {
  SqlQuery q;
  q.sql =
      "SELECT t.id, t.study_id, t.gang_size, t.started_at_us, "
      "t.lease_expires_at_us FROM trial_leases l JOIN trials t ON t.id = "
      "l.trial_id WHERE l.agent_id = ?1 AND +t.status = 'leased' ORDER BY "
      "t.id";
  q.params = {std::string(agent_id)};
  return q;
}

absl::StatusOr<SqlQuery> StudyListQuery(const StudyFilter& f) {
  TESSERA_RETURN_IF_ERROR(ValidateStudyFilter(f));
  Conditions where;
  where.AddIn("status", f.statuses, StudyStatusName);
  if (!f.model.empty()) where.Add("model = ?", f.model);
  if (!f.gpu.empty()) where.Add("gpu = ?", f.gpu);
  SqlQuery q;
  q.sql = absl::StrCat("SELECT ", kStudyColumns, " FROM studies", where.Where(),
                       " ORDER BY created_at_us DESC, id DESC");
  q.params = std::move(where.params());
  if (f.limit > 0) {
    absl::StrAppend(&q.sql, " LIMIT ?");
    q.params.push_back(f.limit);
  }
  return q;
}

}  // namespace tessera::db::internal
