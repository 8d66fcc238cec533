// SqliteTrialStore: the TrialStore in one SQLite file (WAL). One writer
// connection, serialized inside the store, runs every write as one IMMEDIATE
// transaction with the bounded busy retry; reads run on a small pool of
// separate query-only connections, so history queries never block the writer
// (and several stores or processes may open the same file). The schema is
// brought up to date at Open (db/migrations/).
//
//   SqliteTrialStoreOptions options;
//   options.clock = [&] { return fake_now; };  // tests; default absl::Now
//   TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<SqliteTrialStore> store,
//                            SqliteTrialStore::Open("tessera.db", options));
//
// Durability: commits are synchronous=FULL by default (see db/sqlite.h), so a
// report acknowledged to an agent survives a crash of the planner or of the
// machine. Heartbeats, ExtendLeasesOf and SaveLiveness commit with
// synchronous=NORMAL (no fsync of their own; the next FULL commit syncs
// them): they survive a crash of the process, and the last few before a
// power loss may be lost, which is harmless (agents beat again) and makes
// them about ten times cheaper.
//
// Group commit (group_commit.h): writes that arrive while another commits
// wait and then commit together, each in its own savepoint of one
// transaction with one sync, so that a thousand reports a second share
// their fsyncs; each write still happens entirely or not at all, and its
// caller returns after the commit that made it durable. Destroying the
// store closes its connections; nothing is buffered.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "db/group_commit.h"
#include "db/sqlite.h"
#include "db/trial_store.h"

namespace tessera::db::internal {
struct SqlQuery;  // db/internal/list_queries.h
}  // namespace tessera::db::internal

namespace tessera::db {

struct SqliteTrialStoreOptions {
  Clock clock;  // empty: absl::Now
  // Leases a trial may lose (expired, agent gone) before it becomes crash.
  int64_t max_attempts = 3;
  // Busy timeout, synchronous level and busy retry of every connection.
  DatabaseOptions database;
  // Idle reader connections kept open for reuse.
  int max_idle_readers = 4;
  // Opens an existing store at the current schema for reading only (the
  // history commands' --db): nothing is created, migrated or written; every
  // write method fails.
  bool read_only = false;
  // PRAGMA quick_check when opening: a damaged file is refused (DataLoss)
  // instead of served.
  bool check_integrity = true;
  // The most writes one group commit holds (group_commit.h); 1: every
  // write its own transaction.
  int max_writes_per_commit = 128;
};

// Creates `path` empty with mode 0600 (owner only) unless it exists, so that
// SQLite's database, WAL and shared-memory files (which take the database
// file's mode) are the owner's alone. FailedPrecondition when it cannot.
absl::Status CreateOwnerOnly(const std::string& path);

// OK when PRAGMA quick_check of `db` says "ok"; DataLoss naming `path`, the
// first problem and how to recover otherwise.
absl::Status QuickCheck(Database& db, absl::string_view path);

class SqliteTrialStore : public TrialStore {
 public:
  // Opens (creating when absent) the database file at `path` and applies the
  // migrations it lacks; with options.read_only, opens an existing file that
  // is at the current schema (FailedPrecondition otherwise, naming why).
  // FailedPrecondition for a database written by a newer Tessera;
  // InvalidArgument for ":memory:" or an empty path (a file is needed: readers
  // use connections of their own).
  static absl::StatusOr<std::unique_ptr<SqliteTrialStore>> Open(
      absl::string_view path, SqliteTrialStoreOptions options = {});
  ~SqliteTrialStore() override;

  absl::StatusOr<Study> CreateStudy(const NewStudy& study) override;
  absl::StatusOr<Study> GetStudy(int64_t study_id) override;
  absl::StatusOr<std::vector<Study>> ListStudies(
      const StudyFilter& filter) override;
  absl::Status SetStudyStatus(int64_t study_id, StudyStatus status,
                              absl::string_view reason) override;
  absl::Status SetRecommendation(
      int64_t study_id, absl::string_view recommendation_json) override;

  absl::StatusOr<std::vector<int64_t>> AddTrials(
      int64_t study_id, const std::vector<NewTrial>& trials) override;
  absl::StatusOr<Trial> GetTrial(int64_t trial_id) override;
  absl::StatusOr<std::vector<Trial>> ListTrials(
      const TrialFilter& filter) override;
  absl::StatusOr<std::map<TrialState, int64_t>> CountTrialsByStatus(
      int64_t study_id) override;
  absl::StatusOr<std::vector<TrialMetric>> GetTrialMetrics(
      int64_t trial_id) override;

  absl::Status LeaseTrial(int64_t trial_id,
                          const std::vector<std::string>& agent_ids,
                          absl::Time expires_at) override;
  absl::Status ExtendLease(int64_t trial_id, absl::string_view agent_id,
                           absl::Time expires_at) override;
  absl::Status ReportTrial(int64_t trial_id, absl::string_view agent_id,
                           const TrialResult& result, absl::Time now) override;
  absl::StatusOr<std::vector<int64_t>> ExtendLeasesOf(
      absl::string_view agent_id, absl::Time expires_at) override;
  absl::Status ReleaseLease(int64_t trial_id, absl::string_view agent_id,
                            absl::string_view reason) override;
  absl::StatusOr<RequeueResult> EndLeaseByInfrastructureFailure(
      int64_t trial_id, absl::string_view agent_id,
      absl::string_view reason) override;
  absl::StatusOr<std::vector<HeldLease>> ListLeasesHeldBy(
      absl::string_view agent_id) override;
  absl::StatusOr<std::vector<Trial>> ListQueuedTrials(
      const std::vector<int64_t>& study_ids, int64_t limit,
      const std::vector<int64_t>& passed_over) override;
  uint64_t QueuedTrialsGeneration() const override;
  absl::StatusOr<RequeueResult> RequeueExpiredLeases(absl::Time now) override;
  absl::StatusOr<RequeueResult> RequeueTrialsOf(
      absl::string_view agent_id) override;
  absl::StatusOr<int64_t> ForgiveOutage(absl::Time now,
                                        absl::Time lease_expires_at) override;
  absl::StatusOr<int64_t> CancelQueuedTrials(int64_t study_id) override;
  absl::Status InvalidateTrial(int64_t trial_id,
                               absl::string_view reason) override;

  absl::StatusOr<Agent> UpsertAgent(const AgentRegistration& agent) override;
  absl::Status Heartbeat(absl::string_view agent_id, absl::Time now) override;
  absl::StatusOr<Agent> GetAgent(absl::string_view agent_id) override;
  absl::StatusOr<std::vector<Agent>> ListAgents(
      std::optional<AgentState> state) override;
  absl::Status SaveLiveness(const std::vector<AgentSeen>& agents,
                            const std::vector<LeaseExtension>& leases) override;
  absl::Status MarkAgentGone(absl::string_view agent_id) override;
  absl::StatusOr<std::vector<Agent>> ListStaleAgents(
      absl::Time now, absl::Duration older_than) override;

  absl::StatusOr<std::vector<int64_t>> AddProbes(
      absl::string_view agent_id, const std::vector<Probe>& probes) override;
  absl::StatusOr<std::vector<Probe>> ListProbes(
      const ProbeFilter& filter) override;

  absl::StatusOr<Calibration> SaveCalibration(
      const Calibration& calibration) override;
  absl::StatusOr<Calibration> LatestCalibration(
      absl::string_view scope) override;
  absl::StatusOr<std::vector<std::string>> ScopesCalibratedWith(
      int64_t trial_id) override;
  absl::StatusOr<std::vector<int64_t>> AddCollectiveSamples(
      const std::vector<CollectiveSample>& samples) override;
  absl::StatusOr<std::vector<CollectiveSample>> ListCollectiveSamples(
      absl::string_view cluster) override;
  absl::StatusOr<ImportedCalibration> SaveImportedCalibration(
      const ImportedCalibration& imported) override;
  absl::StatusOr<ImportedCalibration> LatestImportedCalibration(
      absl::string_view gpu) override;

  // The plan sqlite chooses for ListTrials(filter), one EXPLAIN QUERY PLAN
  // line each ("SEARCH t USING INDEX trials_by_layout (tp=?)"): how to check
  // that a history query is served by an index.
  absl::StatusOr<std::vector<std::string>> ExplainListTrials(
      const TrialFilter& filter);
  // The same for ListLeasesHeldBy(agent_id): every heartbeat's read.
  absl::StatusOr<std::vector<std::string>> ExplainListLeasesHeldBy(
      absl::string_view agent_id);
  // The same for ListQueuedTrials: the lease poll's read.
  absl::StatusOr<std::vector<std::string>> ExplainListQueuedTrials(
      const std::vector<int64_t>& study_ids, int64_t limit,
      const std::vector<int64_t>& passed_over);

  const std::string& path() const { return path_; }
  // Group commits so far: transactions and the writes they held.
  int64_t write_batches() const { return commits_.batches(); }
  int64_t writes() const { return commits_.writes(); }

 private:
  SqliteTrialStore(std::string path, SqliteTrialStoreOptions options,
                   std::unique_ptr<Database> writer);

  // Runs `body` as one IMMEDIATE transaction on the writer connection (or
  // a savepoint of one shared with concurrent writes: group commit),
  // committed with `synchronous` (the store's setting by default).
  absl::Status Write(const std::function<absl::Status(Database&)>& body,
                     std::optional<Synchronous> synchronous = std::nullopt);
  // GroupCommit's runner: one transaction for `bodies` at `synchronous`.
  std::vector<absl::Status> WriteBatch(
      const std::vector<const GroupCommit::Body*>& bodies,
      Synchronous synchronous);
  // Runs `body` as one read transaction (one snapshot) on a reader.
  absl::Status Read(const std::function<absl::Status(Database&)>& body);
  // The trials `query` selects (kTrialColumns), in its order, one snapshot.
  absl::StatusOr<std::vector<Trial>> ReadTrials(
      const internal::SqlQuery& query);
  // EXPLAIN QUERY PLAN of `query`, one detail line per row.
  absl::StatusOr<std::vector<std::string>> Explain(
      const internal::SqlQuery& query);
  absl::Time Now() const { return options_.clock(); }

  // Ends the lease of `trial_id` that was lost (expired, agent gone): queued
  // again with attempts + 1, or crash once out of attempts; adds the id to
  // `result`. `why` says how it was lost, for the trial's reason.
  absl::Status EndLostLease(Database& db, int64_t trial_id,
                            absl::string_view why, RequeueResult& result);

  // Has the writer watch for trials that become queued: temporary triggers
  // on trials call a function of this store, so that every path that
  // queues a trial, present or future, grows QueuedTrialsGeneration.
  absl::Status WatchQueuedTrials();

  const std::string path_;
  const SqliteTrialStoreOptions options_;
  // Set by the triggers inside a write transaction; WriteBatch grows the
  // generation after the transaction ends, still holding write_mu_.
  std::atomic<bool> queued_in_transaction_{false};
  std::atomic<uint64_t> queued_generation_{0};
  absl::Mutex write_mu_;
  std::unique_ptr<Database> writer_ ABSL_GUARDED_BY(write_mu_);
  // The writer's current PRAGMA synchronous.
  Synchronous writer_synchronous_ ABSL_GUARDED_BY(write_mu_);
  // Batches Write's calls; its runner takes write_mu_ (declared after the
  // writer, so that it goes first).
  GroupCommit commits_;
  absl::Mutex read_mu_;
  std::vector<std::unique_ptr<Database>> idle_readers_
      ABSL_GUARDED_BY(read_mu_);
};

}  // namespace tessera::db
