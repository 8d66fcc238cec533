// The planner service's domain logic, behind the two gRPC services
// (planner_service.h, agent_service.h), over a TrialStore.
//
// Studies: SubmitStudy checks the spec (INVALID_ARGUMENT "study.<field>"),
// stores it, and starts it: the GPU is resolved (the "agents" preset waits
// for probes), the layouts are ranked with the GPU's latest calibration, and
// rung 0 is queued (halving.h), sized to the agents there are
// (trial_geometry.h). After each report (stored before the RPC returns) the
// advancer thread refits the calibration from every ok trial of the GPU
// (recalibration.h), re-ranks, updates the recommendation (recommendation.h)
// and lets successive halving queue the next trials or end the study;
// reports that arrive while it works on a study are taken together, so a
// refit's cost does not limit how fast results are taken. Everything the
// decisions use is read from the store, so a planner started on the same
// file resumes every study where it stood.
//
// Agents: Register / Heartbeat / ReportProbes; LeaseTrial gives an idle
// agent the next queued trial that fits it (running studies oldest first,
// then rung, then predicted tokens/s); a trial of gang_size > 1 is leased to
// that many idle agents at once, in one store call, node ranks by agent id,
// and each gets its assignment at its next poll. Heartbeats extend the leases
// of the trials an agent runs and return those it must stop. The reaper
// re-queues expired leases, marks silent agents gone (re-queueing their
// trials), ends studies past their time budget and starts studies that were
// waiting for agents. Rendezvous data of gangs lives in memory
// (rendezvous_board.h).
//
//   TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Planner> planner,
//                            Planner::Create(store.get(), options));
//   TESSERA_ASSIGN_OR_RETURN(int64_t id, planner->SubmitStudy(spec));
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "db/trial_store.h"
#include "planner/calibration/prediction_uncertainty.h"
#include "planner/service/event_hub.h"
#include "planner/service/planner_options.h"
#include "planner/service/rendezvous_board.h"
#include "planner/service/study_queries.h"
#include "planner/service/study_run.h"
#include "planner/service/trial_pool.h"
#include "tessera/v1/service.pb.h"

namespace tessera::service {

// The most candidates one Plan call returns: a reply of every feasible
// layout of a large cluster is over 100 MB (the review's top=0 replies were
// 118 MB each and ten of them grew the planner to 3.7 GB).
inline constexpr int64_t kMaxPlanCandidates = 1000;

class Planner {
 public:
  // Loads the store's queued and running studies and resumes them, then
  // starts the reaper (unless options.reaper_period is zero). `store` must
  // outlive the planner.
  static absl::StatusOr<std::unique_ptr<Planner>> Create(
      db::TrialStore* store, PlannerOptions options);
  // Stops the reaper; fails waiting rendezvous fetches.
  ~Planner();

  Planner(const Planner&) = delete;
  Planner& operator=(const Planner&) = delete;

  // ---- PlannerService ----
  // `calibration` (null, or an empty file: none) is checked with the spec
  // and imported for the study's GPU before the study is stored.
  // `*agent_note` (when given) says when no registered agent can run the
  // study's trials yet (Planner::AgentShortage); the study waits for one.
  // `owner` is the submitting caller's principal name ("" for none).
  absl::StatusOr<int64_t> SubmitStudy(
      const v1::StudySpec& spec,
      const v1::ImportCalibrationRequest* calibration = nullptr,
      std::string* agent_note = nullptr, const std::string& owner = "");
  // The read-only queries (study_queries.h). The recommendation is updated
  // after every report and final once the study ends; FAILED_PRECONDITION
  // while an "agents" study has no GPU yet.
  absl::StatusOr<v1::GetStudyResponse> GetStudy(int64_t study_id) {
    return queries_.GetStudy(study_id);
  }
  // Who submitted the study ("" when not known): one row read, for the
  // cancel check (GetStudy also counts and ranks its trials).
  absl::StatusOr<std::string> StudyOwner(int64_t study_id) {
    absl::StatusOr<db::Study> study = store_->GetStudy(study_id);
    if (!study.ok()) return study.status();
    return study->owner;
  }
  absl::StatusOr<v1::ListStudiesResponse> ListStudies(
      const v1::ListStudiesRequest& request) {
    return queries_.ListStudies(request);
  }
  absl::StatusOr<v1::ListTrialsResponse> ListTrials(
      const v1::ListTrialsRequest& request) {
    return queries_.ListTrials(request);
  }
  absl::StatusOr<v1::Recommendation> GetRecommendation(int64_t study_id) {
    return queries_.GetRecommendation(study_id);
  }
  // Cancels the queued trials and ends the study (running trials are told
  // to stop at their next heartbeat). Cancelling a cancelled study returns
  // it; a done or failed one is FAILED_PRECONDITION.
  absl::StatusOr<v1::StudySummary> CancelStudy(int64_t study_id);
  absl::StatusOr<v1::PlanResponse> Plan(const v1::PlanRequest& request);
  absl::StatusOr<v1::PredictResponse> Predict(
      const v1::PredictRequest& request);
  // Calibration files in and out (calibration_exchange.h): an import is
  // used by every later study, plan and prediction on its GPU.
  absl::StatusOr<v1::ImportCalibrationResponse> ImportCalibration(
      const v1::ImportCalibrationRequest& request);
  absl::StatusOr<v1::ExportCalibrationResponse> ExportCalibration(
      const v1::ExportCalibrationRequest& request);
  // The event a watcher gets first: the study as it stands.
  absl::StatusOr<v1::StudyEvent> CurrentEvent(int64_t study_id);
  EventHub& events() { return events_; }

  // ---- AgentService ----
  absl::StatusOr<v1::RegisterResponse> Register(
      const v1::RegisterRequest& request);
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const v1::HeartbeatRequest& request);
  absl::Status ReportProbes(const v1::ReportProbesRequest& request);
  absl::StatusOr<v1::LeaseTrialResponse> LeaseTrial(
      const v1::LeaseTrialRequest& request);
  absl::Status ReportTrial(const v1::ReportTrialRequest& request);
  absl::Status ReleaseTrial(const v1::ReleaseTrialRequest& request);
  // Publishes (data set; node rank 0 only) or fetches (waiting up to
  // wait_ms, capped); `done` gets the data or the error, possibly later on
  // another thread.
  using RendezvousDone = std::function<void(absl::StatusOr<std::string>)>;
  void Rendezvous(const v1::RendezvousRequest& request, RendezvousDone done);
  // A cluster probe's sweep from its node rank 0 (cluster_probe.h).
  absl::Status ReportCollectiveProbe(
      const v1::ReportCollectiveProbeRequest& request);

  // One pass of the reaper: expired leases, silent agents, time budgets,
  // studies waiting for agents.
  void Reap();

  // Before the server shuts down: fails waiting rendezvous fetches (and
  // later ones), so that no call is left waiting.
  void StopWaits() {
    rendezvous_.Stop();
    probe_rendezvous_.Stop();
  }

  // Blocks until every study advance requested so far has run (reports and
  // the reaper only request them: a worker thread refits, re-ranks and
  // decides, one study at a time, coalescing requests for the same study).
  void WaitForAdvances();

  const PlannerOptions& options() const { return options_; }

 private:
  // What leasing needs of a started study (immutable once started).
  struct Runnable {
    std::string backend;  // agents that run its trials
    int64_t ranks_per_agent = 1;
    v1::ModelSpec model;  // as trialed (layers scale-down applied)
    int64_t seq_len = 0;
    std::string stack;      // the study's training stack
    std::string precision;  // "bf16", "fp8"
    TrialOptions options;
  };

  Planner(db::TrialStore* store, PlannerOptions options);

  absl::Time Now() const;
  void RunReaper();
  // A gang member silent this long (GangMemberSilence: 3 heartbeat
  // intervals, at least 5 s) ends its gang's lease: the other members'
  // processes crash or hang without it, and such a crash is not the
  // layout's (the agents hold a gang crash back that long, agents/agent.h).
  absl::Duration GangMemberSilence() const {
    return std::max(3 * options_.heartbeat_interval, absl::Seconds(5));
  }
  // Ends, as infrastructure failures (an attempt counted, queued again),
  // the leases of gang trials with a member silent for GangMemberSilence;
  // their ids.
  std::vector<int64_t> EndGangsWithASilentMember(absl::Time now);
  // Tells each study in `runs` (watch events) that the agents `lost` were
  // marked gone, and whether any agent left can run its trials.
  void TellStudiesOfLostAgents(
      const std::vector<std::shared_ptr<StudyRun>>& runs,
      const std::vector<std::string>& lost);

  // ---- Studies (planner_studies.cc, study_progress.cc) ----
  void ResumeStudies();
  std::shared_ptr<StudyRun> FindRun(int64_t study_id);
  // The workload `trial` runs (WorkloadTrialRan of its study's); nullopt
  // when the study is not running or its GPU not yet resolved.
  std::optional<Workload> TrialWorkload(const db::Trial& trial);
  // Starts every queued study that waits for agents.
  void StartWaitingStudies();
  // Locks the run and starts or advances it; errors are logged.
  void Start(const std::shared_ptr<StudyRun>& run);
  void Advance(const std::shared_ptr<StudyRun>& run);
  absl::Status StartLocked(StudyRun& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu);
  absl::Status AdvanceLocked(StudyRun& run)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu);
  absl::Status FinishLocked(StudyRun& run, db::StudyStatus status,
                            const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu);
  // Resolves the run's workload (GPU) and calibration; false when an
  // "agents" study still has no agent with probes.
  absl::StatusOr<bool> ResolveLocked(StudyRun& run)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu);
  std::string ChooseBackendLocked(StudyRun& run)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu);
  absl::StatusOr<TrialPool> PoolLocked(StudyRun& run, int64_t agents)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu);
  absl::Status RefitLocked(StudyRun& run, const std::vector<db::Trial>& trials)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu);
  absl::Status StoreRecommendationLocked(StudyRun& run, const TrialPool& pool,
                                         const std::vector<db::Trial>& trials,
                                         bool final)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu);
  void MarkRunnableLocked(StudyRun& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu);
  absl::StatusOr<std::vector<db::Trial>> TrialsOf(int64_t study_id);
  absl::StatusOr<v1::StudySummary> Summary(int64_t study_id) {
    return queries_.Summary(study_id);
  }
  // Logs `message` and, when someone watches the study, publishes it.
  void Emit(int64_t study_id, const std::string& message,
            const db::Trial* trial = nullptr);
  absl::StatusOr<Workload> WorkloadForRequest(const v1::StudySpec& spec);
  // The calibration `workload` plans with: the GPU's latest import and the
  // latest fit of the trials on the GPU called `gpu_name` that is newer
  // (calibration_exchange.h), as StudyCalibration carries them to the
  // workload's stack; the stack's defaults without either. `*mape` and
  // `*samples` are the fit's (the import's without a newer fit); `*spreads`
  // (when given) how uncertain its predictions are (GpuPredictionUncertainty).
  planner::Calibration LatestGpuCalibration(
      const std::string& gpu_name, const Workload& workload, double* mape,
      int64_t* samples, planner::PredictionUncertainty* spreads = nullptr);

  // ---- Cluster probes (planner_probes.cc, cluster_probe.h) ----
  struct ProbeJob {
    int64_t id = 0;
    std::string cluster;  // the GPU name the study plans for
    std::string backend;
    int64_t nodes = 2;
    int64_t ranks_per_node = 1;
    std::vector<std::string> agent_ids;  // the lease by node rank; empty:
                                         // queued
    absl::Time lease_expires_at;
    int64_t attempts = 0;  // leases that ended without a sweep
  };
  // What LeaseProbe decided for one agent.
  struct ProbeLease {
    std::optional<v1::TrialAssignment> assignment;
    bool wait = false;  // a probe it fits waits for its gang: lease nothing
  };
  // Queues the probes the run's cluster still lacks (none unless
  // options.cluster_probes, and only for a cluster its agents are).
  void QueueClusterProbesLocked(StudyRun& run)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu);
  absl::StatusOr<ProbeLease> LeaseProbe(const db::Agent& agent, absl::Time now);
  // A probe left its lease: its rendezvous and undelivered assignments go.
  void ProbeLeaseEnded(int64_t probe_id);
  // A probe's lease ended without a sweep: queued again, or dropped after
  // its second attempt. Called with mu_ held.
  void ProbeAttemptFailedLocked(ProbeJob& job, const std::string& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tells the studies planning for `cluster` (their event streams).
  void EmitToCluster(const std::string& cluster, const std::string& message);

  // ---- Agents (planner_agents.cc) ----
  absl::StatusOr<db::Agent> ActiveAgent(absl::string_view agent_id);
  // Active agents of `backend` ("" any) offering >= `ranks` ranks.
  // Empty when an active agent can run trials of `ranks` ranks on
  // `backend` (empty: any Tessera backend); else why not, naming what is
  // registered: "no registered agent can run its trials: each needs 8 ranks
  // on backend cuda; registered: a (cpu, 2 ranks). It waits for one ...".
  absl::StatusOr<std::string> AgentShortage(absl::string_view backend,
                                            int64_t ranks);
  absl::StatusOr<std::vector<db::Agent>> SuitableAgents(
      absl::string_view backend, int64_t ranks);
  bool Fits(const db::Agent& agent, const Runnable& runnable) const;
  v1::TrialAssignment Assignment(const db::Trial& trial,
                                 const Runnable& runnable,
                                 const db::Agent& agent, int64_t node_rank,
                                 absl::Time expires_at) const;
  // `agent` and idle agents (polled recently, no pending lease) that
  // `fits`, up to `size` of them, sorted by id (fewer: the gang is not
  // there yet).
  std::vector<db::Agent> IdleGang(
      const db::Agent& agent, int64_t size, absl::Time now,
      const std::function<bool(const db::Agent&)>& fits);
  // Tries to lease the next fitting trial to `agent`; nullopt: nothing now.
  absl::StatusOr<std::optional<v1::TrialAssignment>> LeaseNext(
      const db::Agent& agent, absl::Time now);
  // Of `held` (the trials `agent_id` holds), ends the leases of gang trials
  // it does not run (not in `running`) though they started more than
  // GangMemberSilence ago and have no assignment waiting for it; the rest.
  absl::StatusOr<std::vector<db::Trial>> EndGangsThisAgentLeft(
      const std::string& agent_id, std::vector<db::Trial> held,
      const std::set<int64_t>& running, absl::Time now);
  // Whether a gang assignment of `trial_id` waits for `agent_id`'s poll.
  bool AssignmentPending(const std::string& agent_id, int64_t trial_id);
  // After a trial left the leased state (reported, re-queued, released).
  void TrialLeaseEnded(int64_t trial_id);
  // Removes the undelivered gang assignments `drop` selects.
  void DropPendingAssignments(
      const std::function<bool(const v1::TrialAssignment&)>& drop);
  // Asks the advancer to advance the study (once, however often asked
  // before it gets to it).
  void RequestAdvance(int64_t study_id);
  void RunAdvancer();
  bool AdvancerIdle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(advance_mu_) {
    return advance_queue_.empty() && !advance_busy_;
  }
  bool AdvancerHasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(advance_mu_) {
    return advance_stopping_ || !advance_queue_.empty();
  }

  db::TrialStore* const store_;
  const StudyQueries queries_;
  const PlannerOptions options_;
  EventHub events_;
  RendezvousBoard rendezvous_;
  RendezvousBoard probe_rendezvous_;  // keyed by probe id

  absl::Mutex mu_;
  std::map<int64_t, std::shared_ptr<StudyRun>> runs_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, Runnable> runnable_ ABSL_GUARDED_BY(mu_);
  // Idle agents: the time of their last LeaseTrial poll.
  std::map<std::string, absl::Time> idle_since_poll_ ABSL_GUARDED_BY(mu_);
  // Gang leases formed while the agent was away, delivered at its next poll.
  std::map<std::string, std::vector<v1::TrialAssignment>> pending_
      ABSL_GUARDED_BY(mu_);
  std::map<int64_t, ProbeJob> probes_ ABSL_GUARDED_BY(mu_);
  int64_t next_probe_id_ ABSL_GUARDED_BY(mu_) = 1;
  // Serializes lease decisions (they read the queue, then lease).
  absl::Mutex lease_mu_ ABSL_ACQUIRED_BEFORE(mu_);

  // The advancer: studies to advance, in request order, each once.
  mutable absl::Mutex advance_mu_;
  std::deque<int64_t> advance_queue_ ABSL_GUARDED_BY(advance_mu_);
  std::set<int64_t> advance_queued_ ABSL_GUARDED_BY(advance_mu_);
  bool advance_busy_ ABSL_GUARDED_BY(advance_mu_) = false;
  bool advance_stopping_ ABSL_GUARDED_BY(advance_mu_) = false;
  std::thread advancer_;

  absl::Mutex reaper_mu_;
  absl::CondVar reaper_wake_;
  bool stopping_ ABSL_GUARDED_BY(reaper_mu_) = false;
  std::thread reaper_;
};

}  // namespace tessera::service
