// SqliteTrialStore: opening, the writer and reader connections, studies.
// Trials, leases and agents/probes/calibrations are in
// sqlite_trial_store_{trials,leases,agents}.cc.
#include "db/sqlite_trial_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <sqlite3.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/status_macros.h"
#include "db/internal/list_queries.h"
#include "db/internal/rows.h"
#include "db/migrations.h"
#include "db/result_checksum.h"
#include "db/validation.h"
#include "db/wal_check.h"

namespace tessera::db {

using internal::LoadStudy;
using internal::ToMicros;

absl::Status CreateOwnerOnly(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                        S_IRUSR | S_IWUSR);
  if (fd >= 0) {
    ::close(fd);
    return absl::OkStatus();
  }
  if (errno == EEXIST) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "store.path: cannot create ", path, ": ", std::strerror(errno)));
}

// The store at `path` is damaged (`what` says how it showed): refused,
// with what to do.
absl::Status DamagedStoreError(absl::string_view path, absl::string_view what) {
  return absl::DataLossError(absl::StrCat(
      "store.path: ", path, " is damaged (", what,
      "); nothing was served from it. Restore a backup (tessera-planner "
      "--backup) or move the file aside to start an empty history"));
}

absl::Status QuickCheck(Database& db, absl::string_view path) {
  std::vector<std::string> problems;
  const absl::Status ran = [&]() -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(Statement check, db.Prepare("PRAGMA quick_check"));
    for (;;) {
      TESSERA_ASSIGN_OR_RETURN(const bool row, check.Step());
      if (!row) return absl::OkStatus();
      const std::string line = check.ColumnText(0);
      if (line != "ok") problems.push_back(line);
    }
  }();
  // SQLite reports some damage as the check's own failure (SQLITE_CORRUPT,
  // "database disk image is malformed").
  if (ran.code() == absl::StatusCode::kDataLoss) {
    problems.insert(problems.begin(), std::string(ran.message()));
  } else if (!ran.ok()) {
    return ran;
  }
  if (problems.empty()) return absl::OkStatus();
  return DamagedStoreError(
      path, absl::StrCat("PRAGMA quick_check: ", problems.front(),
                         problems.size() > 1
                             ? absl::StrCat(" and ", problems.size() - 1,
                                            " more")
                             : ""));
}

absl::StatusOr<std::unique_ptr<SqliteTrialStore>> SqliteTrialStore::Open(
    absl::string_view path, SqliteTrialStoreOptions options) {
  if (path.empty() || path == ":memory:" || absl::StartsWith(path, "file:")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "store.path: '", path, "' is not a file path (readers need a file)"));
  }
  if (options.max_attempts < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "store.max_attempts: must be >= 1, got ", options.max_attempts));
  }
  if (!options.clock) options.clock = [] { return absl::Now(); };
  options.database.query_only = options.read_only;
  options.database.read_only = options.read_only;
  if (!options.read_only) {
    TESSERA_RETURN_IF_ERROR(CreateOwnerOnly(std::string(path)));
  }
  if (options.check_integrity) {
    // Before SQLite replays the log (opening does), and drops what follows
    // a damaged frame without a word.
    TESSERA_RETURN_IF_ERROR(CheckWriteAheadLog(std::string(path)));
  }
  absl::StatusOr<std::unique_ptr<Database>> opened =
      Database::Open(path, options.database);
  if (opened.status().code() == absl::StatusCode::kDataLoss) {
    // Damage where opening reads (the schema's pages) shows before the
    // check can run.
    return DamagedStoreError(path, opened.status().message());
  }
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Database> writer,
                           std::move(opened));
  if (options.check_integrity) {
    TESSERA_RETURN_IF_ERROR(QuickCheck(*writer, path));
  }
  TESSERA_RETURN_IF_ERROR(options.read_only
                              ? CheckMigrated(*writer, EmbeddedMigrations())
                              : ApplyMigrations(*writer, EmbeddedMigrations()));
  if (options.check_integrity) {
    // A well-formed change to a stored value passes the page checks.
    TESSERA_RETURN_IF_ERROR(
        CheckResultChecksums(*writer, path, !options.read_only));
  }
  const bool read_only = options.read_only;
  std::unique_ptr<SqliteTrialStore> store(new SqliteTrialStore(
      std::string(path), std::move(options), std::move(writer)));
  if (!read_only) TESSERA_RETURN_IF_ERROR(store->WatchQueuedTrials());
  return store;
}

absl::Status SqliteTrialStore::WatchQueuedTrials() {
  absl::MutexLock lock(&write_mu_);
  const auto queued = [](sqlite3_context* context, int, sqlite3_value**) {
    static_cast<SqliteTrialStore*>(sqlite3_user_data(context))
        ->queued_in_transaction_.store(true);
  };
  if (sqlite3_create_function_v2(writer_->handle(), "tessera_trial_queued", 0,
                                 SQLITE_UTF8, this, queued, nullptr, nullptr,
                                 nullptr) != SQLITE_OK) {
    return absl::InternalError(
        absl::StrCat("store: cannot watch queued trials: ",
                     sqlite3_errmsg(writer_->handle())));
  }
  // TEMP: this connection's own, never in the file.
  return writer_->Exec(
      "CREATE TEMP TRIGGER trial_added_queued AFTER INSERT ON main.trials "
      "WHEN NEW.status = 'queued' BEGIN SELECT tessera_trial_queued(); END;"
      "CREATE TEMP TRIGGER trial_set_queued AFTER UPDATE OF status ON "
      "main.trials WHEN NEW.status = 'queued' "
      "BEGIN SELECT tessera_trial_queued(); END;");
}

uint64_t SqliteTrialStore::QueuedTrialsGeneration() const {
  return queued_generation_.load(std::memory_order_acquire);
}

SqliteTrialStore::SqliteTrialStore(std::string path,
                                   SqliteTrialStoreOptions options,
                                   std::unique_ptr<Database> writer)
    : path_(std::move(path)),
      options_(std::move(options)),
      writer_(std::move(writer)),
      writer_synchronous_(options_.database.synchronous),
      commits_(options_.max_writes_per_commit,
               [this](const std::vector<const GroupCommit::Body*>& bodies,
                      Synchronous synchronous) {
                 return WriteBatch(bodies, synchronous);
               }) {}

SqliteTrialStore::~SqliteTrialStore() = default;

absl::Status SqliteTrialStore::Write(
    const std::function<absl::Status(Database&)>& body,
    std::optional<Synchronous> synchronous) {
  return commits_.Run(body,
                      synchronous.value_or(options_.database.synchronous));
}

std::vector<absl::Status> SqliteTrialStore::WriteBatch(
    const std::vector<const GroupCommit::Body*>& bodies,
    Synchronous synchronous) {
  absl::MutexLock lock(&write_mu_);
  if (synchronous != writer_synchronous_) {
    // Takes effect from the next transaction; cheap, no I/O.
    const absl::Status set = writer_->Exec(synchronous == Synchronous::kFull
                                               ? "PRAGMA synchronous=FULL"
                                               : "PRAGMA synchronous=NORMAL");
    if (!set.ok()) return std::vector<absl::Status>(bodies.size(), set);
    writer_synchronous_ = synchronous;
  }
  std::vector<absl::Status> statuses =
      RunBatchInTransaction(*writer_, TransactionMode::kImmediate, bodies);
  // After the commit (or the rollback: growing it then costs one more
  // look) and before the next batch can run.
  if (queued_in_transaction_.exchange(false)) {
    queued_generation_.fetch_add(1, std::memory_order_release);
  }
  return statuses;
}

absl::Status SqliteTrialStore::Read(
    const std::function<absl::Status(Database&)>& body) {
  std::unique_ptr<Database> reader;
  {
    absl::MutexLock lock(&read_mu_);
    if (!idle_readers_.empty()) {
      reader = std::move(idle_readers_.back());
      idle_readers_.pop_back();
    }
  }
  if (reader == nullptr) {
    DatabaseOptions options = options_.database;
    options.query_only = true;
    TESSERA_ASSIGN_OR_RETURN(reader, Database::Open(path_, options));
  }
  absl::Status status =
      RunInTransaction(*reader, TransactionMode::kDeferred, body);
  absl::MutexLock lock(&read_mu_);
  if (static_cast<int>(idle_readers_.size()) < options_.max_idle_readers) {
    idle_readers_.push_back(std::move(reader));
  }
  return status;
}

// ---- Studies ----

absl::StatusOr<Study> SqliteTrialStore::CreateStudy(const NewStudy& s) {
  TESSERA_RETURN_IF_ERROR(ValidateNewStudy(s));
  Study created;
  const absl::Status done = Write([&](Database& db) -> absl::Status {
    const int64_t now_us = ToMicros(Now());
    TESSERA_ASSIGN_OR_RETURN(
        Statement insert,
        db.Prepare("INSERT INTO studies (name, spec_json, model, gpu, nodes, "
                   "gpus_per_node, trial_budget, time_budget_s, status, "
                   "created_at_us, updated_at_us, owner) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?)"));
    insert.BindText(1, s.name)
        .BindText(2, s.spec_json)
        .BindText(3, s.model)
        .BindText(4, s.gpu)
        .BindInt(5, s.nodes)
        .BindInt(6, s.gpus_per_node)
        .BindInt(7, s.trial_budget)
        .BindDouble(8, s.time_budget_s)
        .BindInt(9, now_us)
        .BindInt(10, now_us)
        .BindText(11, s.owner);
    TESSERA_RETURN_IF_ERROR(insert.Run());
    TESSERA_ASSIGN_OR_RETURN(created, LoadStudy(db, db.LastInsertRowId()));
    return absl::OkStatus();
  });
  if (!done.ok()) return done;
  return created;
}

absl::StatusOr<Study> SqliteTrialStore::GetStudy(int64_t study_id) {
  Study study;
  const absl::Status done = Read([&](Database& db) -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(study, LoadStudy(db, study_id));
    return absl::OkStatus();
  });
  if (!done.ok()) return done;
  return study;
}

absl::StatusOr<std::vector<Study>> SqliteTrialStore::ListStudies(
    const StudyFilter& filter) {
  TESSERA_ASSIGN_OR_RETURN(internal::SqlQuery query,
                           internal::StudyListQuery(filter));
  std::vector<Study> studies;
  const absl::Status done = Read([&](Database& db) -> absl::Status {
    studies.clear();
    TESSERA_ASSIGN_OR_RETURN(Statement select, db.Prepare(query.sql));
    internal::BindAll(query.params, select);
    while (true) {
      TESSERA_ASSIGN_OR_RETURN(const bool row, select.Step());
      if (!row) return absl::OkStatus();
      TESSERA_ASSIGN_OR_RETURN(Study study, internal::ReadStudy(select));
      studies.push_back(std::move(study));
    }
  });
  if (!done.ok()) return done;
  return studies;
}

absl::Status SqliteTrialStore::SetStudyStatus(int64_t study_id,
                                              StudyStatus status,
                                              absl::string_view reason) {
  return Write([&](Database& db) -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(const Study study, LoadStudy(db, study_id));
    if (IsFinal(study.status) && study.status != status) {
      return absl::FailedPreconditionError(absl::StrCat(
          "study ", study_id, ": is ", StudyStatusName(study.status),
          ", a final status; cannot become ", StudyStatusName(status)));
    }
    if (study.status == StudyStatus::kRunning &&
        status == StudyStatus::kQueued) {
      return absl::FailedPreconditionError(absl::StrCat(
          "study ", study_id, ": is running; cannot go back to queued"));
    }
    TESSERA_ASSIGN_OR_RETURN(
        Statement update,
        db.Prepare("UPDATE studies SET status = ?, status_reason = ?, "
                   "updated_at_us = ? WHERE id = ?"));
    update.BindText(1, StudyStatusName(status))
        .BindText(2, reason)
        .BindInt(3, ToMicros(Now()))
        .BindInt(4, study_id);
    return update.Run();
  });
}

absl::Status SqliteTrialStore::SetRecommendation(
    int64_t study_id, absl::string_view recommendation_json) {
  if (!IsJson(recommendation_json)) {
    return absl::InvalidArgumentError(
        "study.recommendation_json: is not valid JSON");
  }
  return Write([&](Database& db) -> absl::Status {
    TESSERA_RETURN_IF_ERROR(LoadStudy(db, study_id).status());
    TESSERA_ASSIGN_OR_RETURN(
        Statement update,
        db.Prepare("UPDATE studies SET recommendation_json = ?, "
                   "updated_at_us = ? WHERE id = ?"));
    update.BindText(1, recommendation_json)
        .BindInt(2, ToMicros(Now()))
        .BindInt(3, study_id);
    return update.Run();
  });
}

absl::StatusOr<std::vector<std::string>> SqliteTrialStore::ExplainListTrials(
    const TrialFilter& filter) {
  TESSERA_ASSIGN_OR_RETURN(const internal::SqlQuery query,
                           internal::TrialListQuery(filter));
  return Explain(query);
}

absl::StatusOr<std::vector<std::string>>
SqliteTrialStore::ExplainListLeasesHeldBy(absl::string_view agent_id) {
  return Explain(internal::LeasesHeldByQuery(agent_id));
}

absl::StatusOr<std::vector<std::string>>
SqliteTrialStore::ExplainListQueuedTrials(
    const std::vector<int64_t>& study_ids, int64_t limit,
    const std::vector<int64_t>& passed_over) {
  TESSERA_ASSIGN_OR_RETURN(
      const internal::SqlQuery query,
      internal::QueuedTrialsQuery(study_ids, limit, passed_over));
  return Explain(query);
}

absl::StatusOr<std::vector<std::string>> SqliteTrialStore::Explain(
    const internal::SqlQuery& query) {
  std::vector<std::string> plan;
  const absl::Status done = Read([&](Database& db) -> absl::Status {
    plan.clear();
    TESSERA_ASSIGN_OR_RETURN(
        Statement explain,
        db.Prepare(absl::StrCat("EXPLAIN QUERY PLAN ", query.sql)));
    internal::BindAll(query.params, explain);
    while (true) {
      TESSERA_ASSIGN_OR_RETURN(const bool row, explain.Step());
      if (!row) return absl::OkStatus();
      plan.push_back(explain.ColumnText(3));  // id, parent, notused, detail
    }
  });
  if (!done.ok()) return done;
  return plan;
}

}  // namespace tessera::db
