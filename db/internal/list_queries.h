// The SQL of the SQLite store's list queries (ListStudies, ListTrials: the
// history), built from a filter with every value bound as a parameter.
// Private to db/.
//
//   TESSERA_ASSIGN_OR_RETURN(SqlQuery q, TrialListQuery(filter));
//   TESSERA_ASSIGN_OR_RETURN(Statement stmt, db.Prepare(q.sql));
//   BindAll(q.params, stmt);
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "db/sqlite.h"
#include "db/trial_store.h"

namespace tessera::db::internal {

// One bound value: an integer or a text.
struct SqlValue {
  SqlValue(int64_t value) : number(value) {}  // NOLINT: implicit by design
  SqlValue(std::string value)
      : is_text(true), text(std::move(value)) {}  // NOLINT
  bool is_text = false;
  int64_t number = 0;
  std::string text;
};

struct SqlQuery {
  std::string sql;
  std::vector<SqlValue> params;  // for ?1, ?2, ... in order
};

// Binds params[i] to parameter i + 1.
void BindAll(const std::vector<SqlValue>& params, Statement& stmt);

// SELECT kTrialColumns FROM trials t ... for `filter` (checked first:
// InvalidArgument for an unknown sort key or a negative limit).
absl::StatusOr<SqlQuery> TrialListQuery(const TrialFilter& filter);

// SELECT kTrialColumns of the queued trials of `study_ids`, in the order
// leases take them (study, rung, predicted tokens/s best first, unpredicted
// last, id), at most `limit` (checked first: InvalidArgument when < 1),
// without the trials `passed_over`. Served in that order by the index
// trials_by_study_in_lease_order, whose last column (id) rules out a passed
// over trial before its row is read.
absl::StatusOr<SqlQuery> QueuedTrialsQuery(
    const std::vector<int64_t>& study_ids, int64_t limit,
    const std::vector<int64_t>& passed_over);

// The leases `agent_id` holds (trial id, study id, gang size, started and
// expiry, in trial id order): every heartbeat runs it. Driven from the
// agent's leases (trial_leases_by_agent), never from trials by status:
// the status term is kept off the indexes (unary +), so that an index on
// trials by status can never make a heartbeat walk every leased trial of
// the fleet.
SqlQuery LeasesHeldByQuery(absl::string_view agent_id);

// SELECT kStudyColumns FROM studies ... newest first.
absl::StatusOr<SqlQuery> StudyListQuery(const StudyFilter& filter);

}  // namespace tessera::db::internal
