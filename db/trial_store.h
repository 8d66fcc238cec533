// TrialStore: everything the planner service keeps — studies, their trials
// and per-step metrics, agents, probes and calibrations — behind one interface
// so that a server database (PostgreSQL) can replace the embedded SQLite one
// (db/sqlite_trial_store.h).
//
//   TESSERA_ASSIGN_OR_RETURN(Study study, store.CreateStudy(new_study));
//   TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> ids,
//                            store.AddTrials(study.id, candidates));
//   TESSERA_RETURN_IF_ERROR(
//       store.LeaseTrial(ids[0], {"node-a"}, now + absl::Minutes(5)));
//   ...
//   absl::Status s = store.ReportTrial(ids[0], "node-a", result, now);
//   // OK: stored once. AlreadyExists: a retry of a report already stored.
//
// Contract of every implementation:
// - Each write is one transaction: it happens entirely or not at all, and on
//   any error nothing is changed. A write that returned OK survives a crash of
//   the process (and, with the default settings, of the machine).
// - Errors: NotFound for an unknown id, FailedPrecondition when the record is
//   in the wrong state for the operation, AlreadyExists for a repeat of a
//   write that may happen only once, InvalidArgument for bad input (the
//   message names the field: "trial.steps: ..."), Unavailable when the
//   database stayed locked through the bounded retry (retryable).
// - Heartbeat and ExtendLeasesOf are the writes an implementation may leave
//   unsynced to disk (they must still survive a crash of the process): losing
//   the last ones to a power cut is harmless, and they are the most frequent.
// - Methods are safe to call from several threads at once.
//
// Trial life cycle:
//   queued -> leased           LeaseTrial
//   leased -> ok, oom, nan, timeout, crash or invalid
//                              ReportTrial (the result's status)
//   leased -> queued           lease expired, agent gone or an infrastructure
//                              failure (attempts + 1)
//   leased -> queued           ReleaseLease (handed back; no attempt counted)
//   leased -> crash            the same, once attempts reach the maximum
//   leased -> cancelled        any of these once the trial's study is final
//                              (cancelled, done or failed: nothing may run it)
//   queued -> cancelled        CancelQueuedTrials
//   queued or crash -> ok, ...  ReportTrial by a holder of the lease that was
//                              lost, while the trial was not leased again
//                              and its study is not final (a late report:
//                              the lost lease's attempt is given back)
//
// Gangs: a trial with gang_size N is leased to N agents at once (all or
// none). Any holder may report; the first report stored is the trial's
// result and clears the lease of the whole gang; later reports of the gang's
// other agents get AlreadyExists and change nothing. The service lets the
// gang's rank-0 agent merge and report, and others treat AlreadyExists as
// done.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/layout.h"
#include "core/trial_result.h"

namespace tessera::db {

// The store's time source; tests drive one by hand.
using Clock = std::function<absl::Time()>;

// ---- Studies ----

enum class StudyStatus { kQueued, kRunning, kDone, kCancelled, kFailed };

absl::string_view StudyStatusName(StudyStatus status);
absl::StatusOr<StudyStatus> ParseStudyStatus(absl::string_view text);
// done, cancelled and failed are final.
bool IsFinal(StudyStatus status);

// What CreateStudy needs.
struct NewStudy {
  std::string name;
  std::string spec_json;  // the StudySpec as JSON (must parse as JSON)
  std::string model;      // preset name or "custom"
  std::string gpu;        // GPU name
  int64_t nodes = 1;
  int64_t gpus_per_node = 1;
  int64_t trial_budget = 0;  // trials the study may run; 0 = no limit
  double time_budget_s = 0;  // wall time the study may take; 0 = no limit
  // Who submitted it (a principal name); "" when the planner does not tell
  // callers apart.
  std::string owner;
};

struct Study {
  int64_t id = 0;
  std::string name;
  std::string spec_json;
  std::string model;
  std::string gpu;
  int64_t nodes = 1;
  int64_t gpus_per_node = 1;
  int64_t trial_budget = 0;
  double time_budget_s = 0;
  StudyStatus status = StudyStatus::kQueued;
  std::string status_reason;
  std::string recommendation_json;  // "" until SetRecommendation
  absl::Time created_at;
  absl::Time updated_at;
  std::string owner;  // NewStudy::owner
};

struct StudyFilter {
  std::vector<StudyStatus> statuses;  // any of these; empty = all
  std::string model;                  // "" = any
  std::string gpu;                    // "" = any
  int64_t limit = 0;                  // 0 = no limit
};

// ---- Trials ----

// A trial's state: the TrialStatus of its result once reported, or where it
// is in the queue.
enum class TrialState {
  kQueued,
  kLeased,
  kOk,
  kOom,
  kNan,
  kTimeout,
  kCrash,
  kInvalid,
  kCancelled,
};

absl::string_view TrialStateName(TrialState state);
absl::StatusOr<TrialState> ParseTrialState(absl::string_view text);
// Every state but queued and leased is final.
bool IsFinal(TrialState state);
// The state a result of `status` puts its trial in.
TrialState StateOfResult(TrialStatus status);
// Every state, in declaration order.
const std::vector<TrialState>& AllTrialStates();

// The cost model's prediction for a trial's layout.
struct TrialPrediction {
  double tokens_per_s = 0;
  double tokens_per_joule = 0;
  double step_time_s = 0;
  int64_t peak_memory_bytes = 0;  // per GPU
};

// What AddTrials needs for one trial.
struct NewTrial {
  Layout layout;       // resolved (dp, grad_accum set) by the planner
  int64_t rung = 0;    // successive-halving level
  int64_t steps = 50;  // measured steps requested
  int64_t warmup_steps = 10;
  int64_t gang_size = 1;  // agents the trial needs
  std::optional<TrialPrediction> predicted;
};

// The scalar metrics of a stored result (TrialResult's fields).
struct TrialMeasurement {
  std::string backend;
  std::string device;
  int64_t ranks = 0;
  int64_t steps = 0;  // measured steps completed
  StepTimeStats step_time_s;
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double tflops_per_gpu = 0;
  double mfu = 0;
  int64_t peak_memory_bytes = 0;  // the largest over the ranks
  double compute_s = 0;
  double comm_s = 0;
  double exposed_comm_s = 0;
  std::optional<double> watts_per_gpu;     // absent: power not measured
  std::optional<double> tokens_per_joule;  // absent: power not measured
};

struct Trial {
  int64_t id = 0;
  int64_t study_id = 0;
  std::string model;  // the study's
  std::string gpu;    // the study's
  Layout layout;
  int64_t rung = 0;
  int64_t steps = 0;
  int64_t warmup_steps = 0;
  int64_t gang_size = 1;
  TrialState status = TrialState::kQueued;
  std::string reason;  // why it failed, was re-queued or cancelled
  std::optional<TrialPrediction> predicted;
  // The lease: holders in gang-rank order, and its expiry; set while leased.
  std::vector<std::string> lease_agent_ids;
  std::optional<absl::Time> lease_expires_at;
  int64_t attempts = 0;  // leases that ended without a report
  // The holders of its last lease when that ended without a report (lost),
  // until it is leased again or reported: they may still report it late.
  std::vector<std::string> lost_lease_agent_ids;
  // The result; set once reported.
  std::string reported_by;  // "" until reported
  std::optional<TrialMeasurement> measured;
  std::string result_json;  // TrialResultToJson of the report; "" until then
  absl::Time created_at;
  std::optional<absl::Time> started_at;   // the current or last lease's start
  std::optional<absl::Time> finished_at;  // reported, cancelled or given up
};

// One step of a reported trial (warm-up steps included: steps numbered from
// 0, those below the result's warmup_steps are warm-up).
struct TrialMetric {
  int64_t trial_id = 0;
  int64_t step = 0;
  double loss = 0;         // NaN when not finite or not recorded
  double step_time_s = 0;  // NaN when not recorded
};

// [begin, end) in time; either end may be open.
struct TimeRange {
  std::optional<absl::Time> begin;
  std::optional<absl::Time> end;
};

// Matches trials whose layout has every field that is set here.
struct LayoutFilter {
  std::optional<int64_t> tp;
  std::optional<bool> sp;
  std::optional<int64_t> pp;
  std::optional<int64_t> vpp;
  std::optional<int64_t> cp;
  std::optional<int64_t> dp;
  std::optional<int64_t> zero;
  std::optional<int64_t> shard_group;
  std::optional<int64_t> micro_batch;
  std::optional<int64_t> grad_accum;
  std::optional<Recompute> recompute;
};

// The trial query, within one study or across studies (the history). Every
// set field must match.
struct TrialFilter {
  std::optional<int64_t> study_id{};
  std::vector<TrialState> statuses{};  // any of these; empty = all
  std::string model{};                 // the study's model; "" = any
  std::string gpu{};                   // the study's GPU; "" = any
  std::optional<int64_t> nodes{};      // the study's cluster
  std::optional<int64_t> gpus_per_node{};
  LayoutFilter layout{};
  std::optional<int64_t> rung{};
  std::string leased_to{};  // an agent holding the lease now; "" = any
  TimeRange created{};
  TimeRange finished{};
  // Sort key: "id" (creation order, the default), "created_at", "finished_at",
  // "rung", "attempts", "tokens_per_s", "tokens_per_s_per_gpu",
  // "tokens_per_joule", "step_time_s", "tflops_per_gpu", "mfu",
  // "peak_memory_bytes", "watts_per_gpu", "exposed_comm_s",
  // "predicted_tokens_per_s", "predicted_tokens_per_joule",
  // "predicted_step_time_s". Trials without the value sort last either way;
  // ties go by id in the same direction.
  std::string sort_by = "id";
  bool descending = false;
  int64_t limit = 0;  // 0 = no limit
  int64_t offset = 0;
};

// The sort keys TrialFilter::sort_by accepts.
const std::vector<std::string>& TrialSortKeys();

// What happened to the trials whose leases ended without a report.
struct RequeueResult {
  std::vector<int64_t> requeued;   // queued again, attempts + 1
  std::vector<int64_t> crashed;    // out of attempts: now crash, with a reason
  std::vector<int64_t> cancelled;  // its study is final: now cancelled
};

// A lease an agent holds, as its heartbeat needs it (ListLeasesHeldBy).
struct HeldLease {
  int64_t trial_id = 0;
  int64_t study_id = 0;
  int64_t gang_size = 1;
  std::optional<absl::Time> started_at;
  std::optional<absl::Time> expires_at;
};

// What the planner learns from heartbeats and keeps in memory between
// writes (SaveLiveness): when an agent was last heard, and how far a lease
// it holds now reaches.
struct AgentSeen {
  std::string agent_id;
  absl::Time at;
};
struct LeaseExtension {
  int64_t trial_id = 0;
  std::string agent_id;  // the holder whose heartbeat extended it
  absl::Time expires_at;
};

// ---- Agents, probes, calibrations ----

enum class AgentState { kActive, kGone };

absl::string_view AgentStateName(AgentState state);
absl::StatusOr<AgentState> ParseAgentState(absl::string_view text);

// What an agent says about itself when it registers.
struct AgentRegistration {
  // Letters, digits and . _ : - (at most 128); "" = let the store assign one.
  std::string id;
  std::string hostname;
  std::string backend;   // "cpu" or "cuda"
  std::string gpu_name;  // "" for cpu
  int64_t gpu_count = 0;
  int64_t memory_bytes = 0;  // per GPU (cuda) or of the host (cpu)
  std::string driver;
  std::string interconnect;  // "nvlink", "pcie", "none", ...
  int64_t cpu_ranks = 0;     // thread ranks of the cpu backend
  std::string address;       // where the gang's other agents reach it
};

struct Agent {
  AgentRegistration info;
  AgentState state = AgentState::kActive;
  absl::Time registered_at;
  absl::Time last_heartbeat_at;
};

// One probe measurement of an agent.
struct Probe {
  int64_t id = 0;          // assigned by AddProbes
  std::string agent_id;    // set by AddProbes
  std::string kind;        // gemm, allreduce, allgather, reducescatter, ...
  int64_t group_size = 1;  // ranks taking part
  int64_t bytes = 0;       // message size (collectives) or 0
  double value = 0;
  std::string unit;  // "GFLOP/s", "GB/s", ...
  absl::Time measured_at;
};

struct ProbeFilter {
  std::string agent_id;  // "" = any
  std::string kind;      // "" = any
};

// A fitted set of cost-model coefficients.
struct Calibration {
  int64_t id = 0;     // assigned by SaveCalibration
  std::string scope;  // StudyScope(id) or GpuScope(name)
  std::map<std::string, double> coefficients;
  int64_t samples = 0;    // trials and probes the fit used
  double fit_error = 0;   // e.g. relative RMS error of the fit
  absl::Time created_at;  // set by SaveCalibration
  // The trials it was fitted to, and those the fit left out as outliers
  // (ascending ids, disjoint; each must exist). Empty for a calibration that
  // names none (one saved before the store kept them).
  std::vector<int64_t> trial_ids;
  std::vector<int64_t> excluded_trial_ids;
};

// A calibration file imported for a GPU type, kept whole (its text is the
// planner's business: costmodel/calibration/calibration_file.h).
struct ImportedCalibration {
  int64_t id = 0;          // assigned by SaveImportedCalibration
  std::string gpu;         // the GPU preset's name, not empty
  std::string file_json;   // a JSON object
  std::string source;      // what the user called it, e.g. a file name
  absl::Time imported_at;  // set by SaveImportedCalibration
};

// One point of a cluster probe's collective sweep (0004_collective_samples).
struct CollectiveSample {
  int64_t id = 0;          // assigned by AddCollectiveSamples
  std::string cluster;     // what the probe measured, not empty
  std::string collective;  // all_gather, reduce_scatter, all_reduce, sendrecv
  int64_t nodes = 1;       // agents taking part
  int64_t gpus_per_node = 1;  // ranks per agent
  int64_t bytes = 0;          // nccl-tests' whole buffer
  double busbw_gbs = 0;       // > 0 and finite
  std::string agent_ids;      // comma-separated, node ranks in order
  absl::Time measured_at;     // set by AddCollectiveSamples
};

// Calibration scopes: one study's own fit, or a GPU type's across studies.
std::string StudyScope(int64_t study_id);
std::string GpuScope(absl::string_view gpu);

// ---- The interface ----

class TrialStore {
 public:
  virtual ~TrialStore() = default;

  // Studies. CreateStudy stores a queued study and returns it with its id.
  virtual absl::StatusOr<Study> CreateStudy(const NewStudy& study) = 0;
  virtual absl::StatusOr<Study> GetStudy(int64_t study_id) = 0;
  // Newest first.
  virtual absl::StatusOr<std::vector<Study>> ListStudies(
      const StudyFilter& filter) = 0;
  // Final statuses are final (FailedPrecondition to leave one), and a running
  // study does not go back to queued.
  virtual absl::Status SetStudyStatus(int64_t study_id, StudyStatus status,
                                      absl::string_view reason) = 0;
  // `recommendation_json` must parse as JSON; may be set again (it improves
  // while the study runs).
  virtual absl::Status SetRecommendation(
      int64_t study_id, absl::string_view recommendation_json) = 0;

  // Trials. AddTrials queues all of `trials` or none (FailedPrecondition for a
  // study in a final status) and returns their ids in order.
  virtual absl::StatusOr<std::vector<int64_t>> AddTrials(
      int64_t study_id, const std::vector<NewTrial>& trials) = 0;
  virtual absl::StatusOr<Trial> GetTrial(int64_t trial_id) = 0;
  virtual absl::StatusOr<std::vector<Trial>> ListTrials(
      const TrialFilter& filter) = 0;
  // The study's trials by state; every state present, 0 when none.
  virtual absl::StatusOr<std::map<TrialState, int64_t>> CountTrialsByStatus(
      int64_t study_id) = 0;
  // Per-step rows of a reported trial, by step (empty before the report).
  virtual absl::StatusOr<std::vector<TrialMetric>> GetTrialMetrics(
      int64_t trial_id) = 0;

  // Leasing. LeaseTrial gives a queued trial to exactly gang_size active,
  // distinct agents until `expires_at` (FailedPrecondition when the trial is
  // not queued, its study is final, or an agent is gone; NotFound for an
  // unknown trial or agent; InvalidArgument for a gang of the wrong size).
  virtual absl::Status LeaseTrial(int64_t trial_id,
                                  const std::vector<std::string>& agent_ids,
                                  absl::Time expires_at) = 0;
  // Moves the lease's expiry; FailedPrecondition unless `agent_id` holds it.
  virtual absl::Status ExtendLease(int64_t trial_id, absl::string_view agent_id,
                                   absl::Time expires_at) = 0;
  // Moves the expiry of every lease `agent_id` holds (what a heartbeat does)
  // and returns those trials' ids; NotFound for an unknown agent. Like
  // Heartbeat it may be left unsynced to disk (a lost extension at worst
  // re-queues a trial early; its late report is then refused).
  virtual absl::StatusOr<std::vector<int64_t>> ExtendLeasesOf(
      absl::string_view agent_id, absl::Time expires_at) = 0;
  // An agent hands its lease back (it is stopping): the trial is queued again
  // (with its whole gang's lease ended) without counting an attempt, or
  // cancelled when its study is final. FailedPrecondition unless `agent_id`
  // holds the lease; NotFound for an unknown trial.
  virtual absl::Status ReleaseLease(int64_t trial_id,
                                    absl::string_view agent_id,
                                    absl::string_view reason) = 0;
  // An agent says the trial ended by no fault of its layout (its process was
  // killed from outside): the lease ends (with its whole gang's) as a lost
  // lease does, an attempt counted, queued again with `reason` or crashed
  // once the attempts reach the maximum. FailedPrecondition unless
  // `agent_id` holds the lease; NotFound for an unknown trial.
  virtual absl::StatusOr<RequeueResult> EndLeaseByInfrastructureFailure(
      int64_t trial_id, absl::string_view agent_id,
      absl::string_view reason) = 0;
  // Stores `result` (its metrics, its JSON, its per-step rows) as the trial's
  // outcome, sets the trial's state from result.status, and clears the lease.
  // NotFound for an unknown trial; AlreadyExists when a result is stored
  // already (a retried or second gang report: nothing is written);
  // FailedPrecondition when `agent_id` does not hold the lease and may not
  // report late (see the life cycle), saying why: the trial was leased
  // again, its study is final, the agent never held it.
  virtual absl::Status ReportTrial(int64_t trial_id, absl::string_view agent_id,
                                   const TrialResult& result,
                                   absl::Time now) = 0;
  // The leases `agent_id` holds now, by trial id (none for an unknown
  // agent).
  virtual absl::StatusOr<std::vector<HeldLease>> ListLeasesHeldBy(
      absl::string_view agent_id) = 0;
  // Queued trials of `study_ids` in lease order (study id, rung, the higher
  // predicted tokens/s first, id), at most `limit` (> 0), passing over
  // `passed_over` (the trials whose leases are being written: a poll reads
  // the one trial it can take, not those rows too).
  virtual absl::StatusOr<std::vector<Trial>> ListQueuedTrials(
      const std::vector<int64_t>& study_ids, int64_t limit,
      const std::vector<int64_t>& passed_over) = 0;
  // A number that grows after every commit that made a trial queued (trials
  // added, a lease handed back, lost or ended by a fault; any write that
  // sets a trial's status to queued). Grown after the commit: a reader that
  // reads G and then finds no queued trial may answer "none" without
  // looking again while it still reads G (an idle fleet polls often).
  virtual uint64_t QueuedTrialsGeneration() const = 0;
  // Ends every lease that expired at or before `now`.
  virtual absl::StatusOr<RequeueResult> RequeueExpiredLeases(
      absl::Time now) = 0;
  // Ends every lease `agent_id` holds (with its whole gang); NotFound for an
  // unknown agent.
  virtual absl::StatusOr<RequeueResult> RequeueTrialsOf(
      absl::string_view agent_id) = 0;
  // After the planner was down: no lease expires before `lease_expires_at`
  // and no active agent's last heartbeat is before `now`, so that the time
  // the planner was away counts against nobody (agents heartbeat again
  // within a lease timeout of its return; the dead ones then expire as
  // ever). Returns how many leases were extended.
  virtual absl::StatusOr<int64_t> ForgiveOutage(
      absl::Time now, absl::Time lease_expires_at) = 0;
  // Cancels the study's queued trials (leased ones run on); returns how many.
  virtual absl::StatusOr<int64_t> CancelQueuedTrials(int64_t study_id) = 0;
  // An operator's verdict that a finished trial's result is wrong: it
  // becomes `invalid` with reason "invalidated: <reason>" (its measurements
  // stay, for the record), so that no fit, best or front counts it again.
  // INVALID_ARGUMENT for an empty reason, NOT_FOUND for no such trial,
  // FAILED_PRECONDITION for one still queued or leased.
  virtual absl::Status InvalidateTrial(int64_t trial_id,
                                       absl::string_view reason) = 0;

  // Agents. UpsertAgent registers (or re-registers: fields updated, state
  // active again, heartbeat now) and returns the stored agent with its id.
  virtual absl::StatusOr<Agent> UpsertAgent(const AgentRegistration& agent) = 0;
  // NotFound for an unknown agent; FailedPrecondition for a gone one (it must
  // register again).
  virtual absl::Status Heartbeat(absl::string_view agent_id,
                                 absl::Time now) = 0;
  virtual absl::StatusOr<Agent> GetAgent(absl::string_view agent_id) = 0;
  // By id; `state` = only those in it.
  virtual absl::StatusOr<std::vector<Agent>> ListAgents(
      std::optional<AgentState> state) = 0;
  // Heartbeats kept in memory, written in one transaction (unsynced, like
  // Heartbeat): each active agent's last heartbeat and each lease's expiry,
  // neither ever moved back. An agent that is gone or unknown, and a lease
  // the extension's agent no longer holds, are left as they are (what
  // changed them is newer than the heartbeat). InvalidArgument naming the
  // first malformed agent id.
  virtual absl::Status SaveLiveness(
      const std::vector<AgentSeen>& agents,
      const std::vector<LeaseExtension>& leases) = 0;
  // Marks an agent gone (its leases stay until RequeueTrialsOf or expiry).
  virtual absl::Status MarkAgentGone(absl::string_view agent_id) = 0;
  // Active agents whose last heartbeat is before now - older_than.
  virtual absl::StatusOr<std::vector<Agent>> ListStaleAgents(
      absl::Time now, absl::Duration older_than) = 0;

  // Probes: all or none; NotFound for an unknown agent.
  virtual absl::StatusOr<std::vector<int64_t>> AddProbes(
      absl::string_view agent_id, const std::vector<Probe>& probes) = 0;
  // Oldest first.
  virtual absl::StatusOr<std::vector<Probe>> ListProbes(
      const ProbeFilter& filter) = 0;

  // Collective samples: all or none (INVALID_ARGUMENT naming the first bad
  // field, "collective_samples[2].busbw_gbs: ..."); listed oldest first.
  virtual absl::StatusOr<std::vector<int64_t>> AddCollectiveSamples(
      const std::vector<CollectiveSample>& samples) = 0;
  virtual absl::StatusOr<std::vector<CollectiveSample>> ListCollectiveSamples(
      absl::string_view cluster) = 0;

  // Calibrations: SaveCalibration returns the stored one (id, created_at);
  // LatestCalibration is the last saved for `scope`, NotFound when none.
  virtual absl::StatusOr<Calibration> SaveCalibration(
      const Calibration& calibration) = 0;
  virtual absl::StatusOr<Calibration> LatestCalibration(
      absl::string_view scope) = 0;
  // The scopes whose latest calibration names `trial_id` among its trials or
  // its left-out ones, in scope order.
  virtual absl::StatusOr<std::vector<std::string>> ScopesCalibratedWith(
      int64_t trial_id) = 0;
  // Imported calibration files: the save returns the stored one (id,
  // imported_at); INVALID_ARGUMENT for an empty gpu or text that is not a
  // JSON object. The latest is the last saved for `gpu`, NotFound when none.
  virtual absl::StatusOr<ImportedCalibration> SaveImportedCalibration(
      const ImportedCalibration& imported) = 0;
  virtual absl::StatusOr<ImportedCalibration> LatestImportedCalibration(
      absl::string_view gpu) = 0;
};

}  // namespace tessera::db
