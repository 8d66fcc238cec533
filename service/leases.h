// The lease side of the planner: what AgentService asks. Agents register,
// heartbeat and report their probes; LeaseTrial gives an idle agent the
// next queued trial that fits it (open studies oldest first, then rung,
// then predicted tokens/s); a trial of gang_size > 1 is leased to that many
// idle agents at once, in one store call, node ranks by agent id, and each
// gets its assignment at its next poll. Heartbeats extend the leases of the
// trials an agent runs and return those it must stop; they are kept in
// memory (agent_liveness.h) and written by the reaper, once per pass, before
// it expires anything. The intervals agents are told, and the timeouts,
// grow with the fleet (fleet_pace.h). Reports are checked
// (measurement_check.h) and stored before the call returns. Cluster probes
// (cluster_probe.h) are leased to gangs before any trial. The reaper
// re-queues expired leases, ends gangs with a silent member and marks
// silent agents gone (re-queueing their trials). Rendezvous data of gangs
// lives in memory (rendezvous_board.h).
//
// It reaches the studies only through a StudyDesk (study_desk.h); the
// studies reach it through OpenStudy / CloseStudy / IsOpen.
//
//   Leases leases(store, options, &events, &desk);
//   leases.StartReaper();
//   TESSERA_ASSIGN_OR_RETURN(std::optional<v1::TrialAssignment> a,
//                            leases.LeaseTrial("a1"));
#pragma once

#include <algorithm>
#include <cstdint>
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
#include "service/agent_liveness.h"
#include "service/fleet_pace.h"
#include "service/outage_watch.h"
#include "service/planner_options.h"
#include "service/rendezvous_board.h"
#include "service/study_desk.h"
#include "service/study_events.h"
#include "service/trial_options.h"
#include "tessera/v1/service.pb.h"

namespace tessera::service {

// What leasing needs of a started study (fixed once started).
struct LeasableStudy {
  std::string backend;  // agents that run its trials
  int64_t ranks_per_agent = 1;
  v1::ModelSpec model;  // as trialed (layers scale-down applied)
  int64_t seq_len = 0;
  std::string stack;      // the study's training stack
  std::string precision;  // "bf16", "fp8"
  TrialOptions options;
  // The GPU name its calibration is kept under (the cluster probes' scope)
  // and whether its GPU is the agents' own ("agents" preset).
  std::string cluster;
  bool agents_gpu = false;
};

// One rendezvous call of a gang member (AgentService.Rendezvous).
struct RendezvousCall {
  std::string agent_id;
  int64_t trial_id = 0;
  int64_t collective_probe_id = 0;  // > 0: a cluster probe's, not a trial's
  std::string data;                 // non-empty: publish (node rank 0)
  absl::Duration wait;              // a fetch's wait (capped)
};

class Leases {
 public:
  // `store`, `events` and `desk` must outlive this.
  Leases(db::TrialStore* store, PlannerOptions options, StudyEvents* events,
         StudyDesk* desk);
  // Stops the reaper thread (Planner calls StopReaper first, which also
  // writes the liveness).
  ~Leases();

  Leases(const Leases&) = delete;
  Leases& operator=(const Leases&) = delete;

  // The active agents as the store has them (at start, after the store
  // forgave the time the planner was down): what liveness starts from.
  absl::Status LoadAgents();
  // Starts the reaper thread (none when options.reaper_period is zero) and
  // stops it; Stop is idempotent, waits for a pass in progress and writes
  // what heartbeats taught since the last pass.
  void StopReaper();
  void StartReaper();
  // Writes what heartbeats taught (last-seen times, lease expiries) to the
  // store in one write; false (kept for the next) when the store refused.
  bool SaveLiveness(absl::Time now);
  // The intervals to tell an agent now, and the timeouts (fleet_pace.h).
  Pace TellPace();

  // ---- What AgentService asks ----
  // Stores (or updates) the agent; studies waiting for agents try to start.
  absl::StatusOr<db::Agent> Register(const db::AgentRegistration& agent);
  // Extends the leases of the trials of `running` the agent holds; returns
  // the trials of `running` it must stop (lease lost, study ended). A gang
  // trial it holds but no longer runs is ended as an infrastructure failure.
  absl::StatusOr<std::vector<int64_t>> Heartbeat(
      const std::string& agent_id, const std::set<int64_t>& running);
  absl::Status ReportProbes(const std::string& agent_id,
                            std::vector<db::Probe> probes);
  // The agent's next assignment (a gang's waiting for it first); nullopt:
  // nothing now, poll again.
  absl::StatusOr<std::optional<v1::TrialAssignment>> LeaseTrial(
      const std::string& agent_id);
  // Stores the trial's result. An implausible report is stored as an
  // invalid trial and refused with INVALID_ARGUMENT naming why.
  absl::Status ReportTrial(const std::string& agent_id, int64_t trial_id,
                           const std::string& result_json);
  // Hands a leased trial back: queued again (an attempt counted) when
  // `infrastructure_failure`, else by ReleaseLease's rules.
  absl::Status ReleaseTrial(const std::string& agent_id, int64_t trial_id,
                            const std::string& reason,
                            bool infrastructure_failure);
  // Publishes (data set; node rank 0 only) or fetches (waiting up to
  // call.wait, capped); `done` gets the data or the error, possibly later
  // on another thread.
  using RendezvousDone = std::function<void(absl::StatusOr<std::string>)>;
  void Rendezvous(const RendezvousCall& call, RendezvousDone done);
  // A cluster probe's sweep from its node rank 0 (cluster_probe.h).
  absl::Status ReportCollectiveProbe(const std::string& agent_id,
                                     int64_t collective_probe_id,
                                     const std::string& result_json);

  // ---- What the studies ask ----
  // The study's queued trials may be leased; queues the cluster probes its
  // cluster still lacks (options.cluster_probes).
  void OpenStudy(int64_t study_id, LeasableStudy study);
  // Its queued trials are no longer leased.
  void CloseStudy(int64_t study_id);
  bool IsOpen(int64_t study_id);

  // One pass of the reaper: first an outage of the planner (outage_watch.h)
  // is forgiven, and nothing expires in that pass; else expired leases,
  // gangs with a silent member, silent agents; then the studies' Tick.
  void Reap();
  // Before the server shuts down: fails waiting rendezvous fetches (and
  // later ones), so that no call is left waiting.
  void StopWaits() {
    rendezvous_.Stop();
    probe_rendezvous_.Stop();
  }

  const PlannerOptions& options() const { return options_; }

 private:
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

  absl::Time Now() const;
  void RunReaper();
  // Stops the reaper thread only (the destructor: the store may be gone).
  void StopReaperThread();
  // A pass later than this after the one before is a stall of the process
  // (outage_watch.h): the reaper period plus half a lease timeout.
  absl::Duration StallAllowance() {
    return options_.reaper_period + pace_.Current(Now()).lease_timeout / 2;
  }
  // `agent_id` if it is an active agent (liveness first, else the store,
  // whose answer names why not: NotFound, FailedPrecondition for a gone
  // one).
  absl::StatusOr<db::Agent> KnownActiveAgent(const std::string& agent_id);
  // When an outage is open: renews every lease and agent (ForgiveOutage)
  // and says so; true when one was open (forgiven or not).
  bool ForgiveOpenOutage(absl::Time now);
  // A gang member silent this long (4 heartbeat intervals as told, at
  // least 5 s: fleet_pace.h) ends its gang's lease: the other members'
  // processes crash or hang without it, and such a crash is not the
  // layout's (the agents hold a gang crash back that long, agents/agent.h).
  absl::Duration GangMemberSilence() {
    return pace_.Current(Now()).gang_member_silence;
  }
  // Ends, as infrastructure failures, the leases of gang trials with a
  // member silent for GangMemberSilence; their ids.
  std::vector<int64_t> EndGangsWithASilentMember(absl::Time now);
  // Of `held` (the trials `agent_id` holds), ends the leases of gang trials
  // it does not run (not in `running`) though they started more than
  // GangMemberSilence ago, it registered again since (it restarted) and no
  // assignment of them waits for it; the rest.
  absl::StatusOr<std::vector<db::HeldLease>> EndGangsThisAgentLeft(
      const std::string& agent_id, std::vector<db::HeldLease> held,
      const std::set<int64_t>& running, absl::Time now);
  // After a trial's state changed: its study hears of it (event, advance).
  void TellStudy(int64_t trial_id);
  // For a trial of a study on the agents' own hardware ("agents" GPU): the
  // plausibility ceiling, the highest trusted GEMM peak per rank of the
  // agents that hold (or, reporting late, held) its lease (probe_check.h),
  // and whether they are CPU hosts (their probe is a share of cores others
  // use too: kCpuPeakSlack); nullopt for other studies or without probes.
  struct AgentsCeiling {
    double tflops_per_rank = 0;
    bool cpu_hosts = false;
  };
  std::optional<AgentsCeiling> AgentsGpuCeiling(const db::Trial& trial);

  bool Fits(const db::Agent& agent, const LeasableStudy& study) const;
  v1::TrialAssignment Assignment(const db::Trial& trial,
                                 const LeasableStudy& study,
                                 const db::Agent& agent, int64_t node_rank,
                                 absl::Time expires_at) const;
  // `agent` and idle agents (polled recently, no pending lease) that
  // `fits`, up to `size` of them, sorted by id (fewer: the gang is not
  // there yet).
  std::vector<db::Agent> IdleGang(
      const db::Agent& agent, int64_t size, absl::Time now,
      const std::function<bool(const db::Agent&)>& fits);
  // What a poll decided under lease_mu_: an assignment ready to return
  // (a pending gang's, a cluster probe's, or none), or a trial to lease to
  // `gang` (reserved, with its agents, until the write is done).
  struct LeaseDecision {
    std::optional<v1::TrialAssignment> ready;
    std::optional<db::Trial> trial;
    std::shared_ptr<const LeasableStudy> study;
    std::vector<db::Agent> gang;  // node ranks in order
    absl::Time expires_at;
  };
  absl::StatusOr<LeaseDecision> DecideLease(const db::Agent& agent,
                                            absl::Time now);
  // Whether a gang assignment of `trial_id` waits for `agent_id`'s poll.
  bool AssignmentPending(const std::string& agent_id, int64_t trial_id);
  // After a trial left the leased state (reported, re-queued, released).
  void TrialLeaseEnded(int64_t trial_id);
  // Removes the undelivered gang assignments `drop` selects.
  void DropPendingAssignments(
      const std::function<bool(const v1::TrialAssignment&)>& drop);

  // ---- Cluster probes (cluster_probe_leases.cc) ----
  // Queues the probes `study`'s cluster still lacks; the numbers of agents
  // of the probes queued.
  std::vector<int64_t> QueueClusterProbes(const LeasableStudy& study);
  absl::StatusOr<ProbeLease> LeaseProbe(const db::Agent& agent, absl::Time now);
  // A probe left its lease: its rendezvous and undelivered assignments go.
  void ProbeLeaseEnded(int64_t probe_id);
  // A probe's lease ended without a sweep: queued again, or dropped after
  // its second attempt.
  void ProbeAttemptFailedLocked(ProbeJob& job, const std::string& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  db::TrialStore* const store_;
  const PlannerOptions options_;
  OutageWatch outage_;
  AgentLiveness liveness_;
  FleetPace pace_;
  StudyEvents* const events_;
  StudyDesk* const desk_;
  // When this planner started: a gang leased before it met through the
  // previous planner's rendezvous board, which died with it.
  const absl::Time started_at_;
  RendezvousBoard rendezvous_;
  RendezvousBoard probe_rendezvous_;  // keyed by probe id

  absl::Mutex mu_;
  // Shared with the polls that read them: a poll takes the studies it can
  // serve without copying each (200 open studies' copies were 6% of the
  // planner's CPU under a full queue).
  std::map<int64_t, std::shared_ptr<const LeasableStudy>> open_
      ABSL_GUARDED_BY(mu_);
  // Idle agents: the time of their last LeaseTrial poll.
  std::map<std::string, absl::Time> idle_since_poll_ ABSL_GUARDED_BY(mu_);
  // Gang leases formed while the agent was away, delivered at its next poll.
  std::map<std::string, std::vector<v1::TrialAssignment>> pending_
      ABSL_GUARDED_BY(mu_);
  std::map<int64_t, ProbeJob> probes_ ABSL_GUARDED_BY(mu_);
  // Trials, and the agents of their gangs, whose lease is being written.
  std::set<int64_t> reserved_trials_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> reserved_agents_ ABSL_GUARDED_BY(mu_);
  int64_t next_probe_id_ ABSL_GUARDED_BY(mu_) = 1;
  // Serializes lease decisions (they read the queue, then reserve; the
  // store writes the lease after).
  absl::Mutex lease_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // Study sets whose queue was read empty, with the store's
  // QueuedTrialsGeneration read before and when: a poll of the same set
  // answers "nothing" without reading the queue while the generation is
  // the same and for at most kNothingQueuedFor (in case a trial became
  // queued outside the store's writer).
  struct NothingQueued {
    uint64_t generation = 0;
    absl::Time at;
  };
  std::map<std::vector<int64_t>, NothingQueued> nothing_queued_
      ABSL_GUARDED_BY(lease_mu_);

  absl::Mutex reaper_mu_;
  absl::CondVar reaper_wake_;
  bool stopping_ ABSL_GUARDED_BY(reaper_mu_) = false;
  std::thread reaper_;
};

}  // namespace tessera::service
