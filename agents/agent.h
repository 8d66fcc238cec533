// The agent daemon's life (docs/architecture.md, "The parts and how a study flows", steps 2-3):
//
// - A heartbeat thread registers with the planner (AgentInfo, stable id),
//   then heartbeats every heartbeat_interval_ms with the trials it runs, and
//   kills the trials the planner cancels (nothing is reported for them). It
//   registers again when the planner no longer knows the agent (NOT_FOUND,
//   FAILED_PRECONDITION) and when the connection was lost and came back (a
//   planner restart), and while the planner cannot be reached it retries
//   with exponential backoff and jitter (backoff.h). It never gives up.
//   Each heartbeat's answer may change the intervals (the planner paces its
//   fleet: service/fleet_pace.h); each wait is jittered and
//   stretched while the planner answers slowly or says it is busy
//   (call_pacing.h), and a busy planner (DEADLINE_EXCEEDED,
//   RESOURCE_EXHAUSTED) gets the next heartbeat later, not a registration.
// - The main loop (Run) waits until registered, runs the probes at start
//   and after each re-registration (between trials, never during one),
//   polls LeaseTrial every lease_poll_interval_ms when idle, runs a leased
//   trial (trial_execution.h) and reports its one result with retries until
//   the planner takes it (OK), already has it (ALREADY_EXISTS: another gang
//   member reported) or refuses it for good, naming why
//   (IsDefiniteRefusal: the trial was leased again, its study ended, the
//   result is implausible). A planner that is away, stalled or cannot store
//   gets the report again, however long, even if a heartbeat meanwhile said
//   to stop the trial: the lease clock stops while the planner cannot serve
//   (service/outage_watch.h) and a late report of a trial not
//   leased again is taken.
// - Every finished result is first written to the result spool
//   (result_spool.h, AgentOptions::spool_dir) and removed from it once the
//   planner took it or refused it for good (the log says it was dropped and
//   why). A result whose report was still failing when the agent stopped
//   stays spooled; the next start reports every spooled result, after its
//   first registration and before its probes and leases.
// - Stop() (the first SIGTERM/SIGINT): no more leases; a running trial gets
//   the drain timeout to finish and be reported; past it, it is killed and
//   its lease handed back (ReleaseTrial). A finished trial whose report did
//   not get through within the drain timeout keeps its lease instead (see
//   RunLeasedTrial): its spooled result is reported at the next start.
//   Run() then returns OK.
//   KillChildren() (the second signal) kills every process group at once.
//
//   std::unique_ptr<PlannerClient> planner = PlannerClient::Connect(addr, {});
//   EventLog log(stderr, options.info.agent_id());
//   Agent agent(options, planner.get(), &log);
//   std::thread signals([&] { WaitForSignal(); agent.Stop(); });
//   TESSERA_RETURN_IF_ERROR(agent.Run());
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agents/backoff.h"
#include "agents/call_pacing.h"
#include "agents/command_policy.h"
#include "agents/event_log.h"
#include "agents/planner_client.h"
#include "agents/process.h"
#include "agents/result_spool.h"
#include "agents/trial_execution.h"
#include "tessera/v1/service.pb.h"

namespace tessera::agents {

struct AgentOptions {
  v1::AgentInfo info;  // agent_id, hostname, backend, GPUs, address...
  // What the agent's hardware probes and cluster probes run on: "cpu" or
  // "cuda" (for a command agent, the hardware under the command); "": the
  // trial backend, info.backend.
  std::string device_backend;
  // A name found on PATH or an absolute path (children start in their
  // trial's folder, where a relative one would not resolve).
  std::string trial_binary = "tessera-trial";
  std::string work_dir;  // absolute; trials and probes get folders under it
  // Finished results not yet taken by the planner (result_spool.h); "":
  // `<work_dir>/spool`. It outlives the agent: a restarted agent on the same
  // folder reports what is left there.
  std::string spool_dir;
  absl::Duration drain_timeout = absl::Seconds(30);
  absl::Duration probe_time_limit = absl::Minutes(5);
  BackoffOptions backoff;  // reconnecting, reporting
  // Until the planner's RegisterResponse says otherwise (or when it says 0).
  absl::Duration heartbeat_interval = absl::Seconds(5);
  absl::Duration lease_poll_interval = absl::Seconds(1);
  // Trial processes (trial_execution.h).
  absl::Duration kill_grace = absl::Seconds(5);
  absl::Duration after_failure_grace = absl::Seconds(15);
  bool keep_ok_trial_dirs = false;  // else removed once reported
  // What command trials may run, and as whom (command_policy.h); the
  // default refuses every command. With a run-as user, the work folder is
  // made traversable (0711) for it: each trial folder is then its own.
  CommandPolicy command_policy;
};

class Agent {
 public:
  // `planner` and `log` must outlive the agent.
  Agent(AgentOptions options, PlannerClient* planner, EventLog* log);
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Runs until Stop() and the drain are over; OK then. Call once.
  absl::Status Run();

  // Thread-safe; the drain timeout starts at the first call.
  void Stop();
  // Thread-safe: SIGKILL to every process group the agent has running.
  void KillChildren();

  // For tests: trials reported (OK or ALREADY_EXISTS), registrations made.
  int64_t trials_reported() const;
  int64_t registrations() const;

 private:
  enum class ReportEnd { kDone, kDropped, kGaveUp };

  void HeartbeatLoop();
  void RegisterOnce(Backoff& backoff);
  void HeartbeatOnce(Backoff& backoff, CallPacing& pacing);
  // Main loop steps.
  bool WaitRegistered();
  // Runs and reports the probes once per registration (a no-op when this
  // registration's are done).
  void ProbeAfterRegistration();
  // How this agent runs a lease's processes (trials and probes alike).
  TrialExecutionOptions ExecutionOptions();
  // What probes run on: AgentOptions::device_backend, else info.backend.
  std::string DeviceBackend() const;
  // A cluster probe's share on this agent; node rank 0 reports the sweep.
  void RunLeasedProbe(const v1::TrialAssignment& a);
  void RunLeasedTrial(const v1::TrialAssignment& assignment);
  // After a gang trial crashed here: true when the planner cancels it within
  // 8 heartbeat intervals, at least 10 s (it ended the lease because
  // a gang member was lost: the crash echoed that loss and is not the
  // layout's), false when it did not (the crash stands). The trial stays
  // in the heartbeats' running set meanwhile.
  bool GangMemberWasLost(int64_t trial_id);
  // Reports one result, retrying what is worth retrying until the drain is
  // over. kDropped: the planner refused it for good, `*refusal` says why.
  ReportEnd Report(int64_t trial_id, const std::string& result_json,
                   std::string* refusal);
  // After Report: a result taken or refused leaves the spool (when
  // `spooled`), and a refusal is logged as a dropped result.
  void Settle(int64_t trial_id, ReportEnd end, absl::string_view refusal,
              bool spooled);
  // At start, once registered: reports what an earlier run left spooled.
  void ReportSpooled();
  void Release(int64_t trial_id, absl::string_view reason,
               bool infrastructure_failure = false);
  // Sleeps up to `d`; false when the agent is stopping.
  bool SleepUnlessStopping(absl::Duration d);
  bool DrainOver() const;
  bool Cancelled(int64_t trial_id) const;
  void Forget(int64_t trial_id);
  void NeedRegistration(absl::string_view why);
  // The id the planner knows us by (RegisterResponse.agent_id, else ours).
  std::string AgentId() const;

  const AgentOptions options_;
  PlannerClient* const planner_;
  EventLog* const log_;
  ProcessGroupRegistry children_;

  mutable absl::Mutex mutex_;
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  absl::Time drain_deadline_ ABSL_GUARDED_BY(mutex_) = absl::InfiniteFuture();
  bool done_ ABSL_GUARDED_BY(mutex_) = false;  // ends the heartbeat thread
  bool registered_ ABSL_GUARDED_BY(mutex_) = false;
  std::string agent_id_ ABSL_GUARDED_BY(mutex_);
  int64_t registrations_ ABSL_GUARDED_BY(mutex_) = 0;
  absl::Duration heartbeat_interval_ ABSL_GUARDED_BY(mutex_);
  // Until the next heartbeat: the interval, jittered and stretched while
  // the planner is slow (call_pacing.h).
  absl::Duration heartbeat_wait_ ABSL_GUARDED_BY(mutex_);
  absl::Duration lease_poll_interval_ ABSL_GUARDED_BY(mutex_);
  std::set<int64_t> running_ ABSL_GUARDED_BY(mutex_);
  std::set<int64_t> cancelled_ ABSL_GUARDED_BY(mutex_);
  int64_t trials_reported_ ABSL_GUARDED_BY(mutex_) = 0;
  int64_t probed_registration_ = 0;   // main loop only
  std::optional<ResultSpool> spool_;  // main loop only; opened by Run()
};

}  // namespace tessera::agents
