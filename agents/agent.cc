#include "agents/agent.h"

#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "agents/collective_probe_execution.h"
#include "agents/files.h"
#include "agents/probes.h"
#include "proto/convert.h"

namespace tessera::agents {
namespace {

constexpr int kProbeReportAttempts = 3;
// How long a gang member whose trial crashed waits for the planner to end
// the lease because another member was lost: 8 heartbeat intervals, at
// least 10 s (the planner's reaper ends it after 4 intervals of silence, at
// least 5 s, Leases::GangMemberSilence; a heartbeat then carries the
// cancel).
constexpr int kGangLossWaitHeartbeats = 8;
constexpr absl::Duration kGangLossMinWait = absl::Seconds(10);
constexpr int kReleaseAttempts = 3;

// A duration for the log, to the millisecond ("1.234s", "100ms").
std::string Show(absl::Duration d) {
  return absl::FormatDuration(absl::Trunc(d, absl::Milliseconds(1)));
}

// An interval from the planner, or `fallback` when it gave none.
absl::Duration IntervalOr(int64_t ms, absl::Duration fallback) {
  return ms > 0 ? absl::Milliseconds(ms) : fallback;
}

}  // namespace

Agent::Agent(AgentOptions options, PlannerClient* planner, EventLog* log)
    : options_(std::move(options)),
      planner_(planner),
      log_(log),
      agent_id_(options_.info.agent_id()),
      heartbeat_interval_(options_.heartbeat_interval),
      heartbeat_wait_(options_.heartbeat_interval),
      lease_poll_interval_(options_.lease_poll_interval) {}

void Agent::Stop() {
  absl::MutexLock lock(&mutex_);
  if (stopping_) return;
  stopping_ = true;
  drain_deadline_ = absl::Now() + options_.drain_timeout;
  log_->Log(running_.empty()
                ? std::string("stopping: no trial running")
                : absl::StrCat("stopping: no more leases; the running trial "
                               "has ",
                               Show(options_.drain_timeout), " to finish"));
}

void Agent::KillChildren() { children_.SignalAll(SIGKILL); }

int64_t Agent::trials_reported() const {
  absl::MutexLock lock(&mutex_);
  return trials_reported_;
}

int64_t Agent::registrations() const {
  absl::MutexLock lock(&mutex_);
  return registrations_;
}

bool Agent::SleepUnlessStopping(absl::Duration d) {
  absl::MutexLock lock(&mutex_);
  mutex_.AwaitWithTimeout(absl::Condition(&stopping_), d);
  return !stopping_;
}

bool Agent::DrainOver() const {
  absl::MutexLock lock(&mutex_);
  return stopping_ && absl::Now() >= drain_deadline_;
}

bool Agent::Cancelled(int64_t trial_id) const {
  absl::MutexLock lock(&mutex_);
  return cancelled_.count(trial_id) > 0;
}

void Agent::Forget(int64_t trial_id) {
  absl::MutexLock lock(&mutex_);
  running_.erase(trial_id);
  cancelled_.erase(trial_id);
}

std::string Agent::AgentId() const {
  absl::MutexLock lock(&mutex_);
  return agent_id_;
}

void Agent::NeedRegistration(absl::string_view why) {
  absl::MutexLock lock(&mutex_);
  if (!registered_) return;
  registered_ = false;
  log_->Log(why);
}

// ------------------------------------------------------------ heartbeats --

void Agent::HeartbeatLoop() {
  Backoff backoff(options_.backoff);
  CallPacing pacing(CallPacingOptions{});
  while (true) {
    bool registered;
    {
      absl::MutexLock lock(&mutex_);
      if (done_) return;
      registered = registered_;
    }
    if (registered) {
      HeartbeatOnce(backoff, pacing);
    } else {
      RegisterOnce(backoff);
    }
  }
}

void Agent::RegisterOnce(Backoff& backoff) {
  v1::AgentInfo info = options_.info;
  info.set_agent_id(AgentId());
  absl::StatusOr<v1::RegisterResponse> r = planner_->Register(info);
  if (!r.ok()) {
    const absl::Duration delay = backoff.Next();
    log_->Log(absl::StrCat(IsRetryable(r.status()) ? "planner unreachable"
                                                   : "registration refused",
                           " (", planner_->address(), ": ",
                           r.status().message(), "): retrying in ",
                           Show(delay)));
    absl::MutexLock lock(&mutex_);
    mutex_.AwaitWithTimeout(absl::Condition(&done_), delay);
    return;
  }
  backoff.Reset();
  absl::MutexLock lock(&mutex_);
  registered_ = true;
  ++registrations_;
  if (!r->agent_id().empty() && r->agent_id() != agent_id_) {
    log_->Log(absl::StrCat("the planner calls this agent ", r->agent_id()));
    agent_id_ = r->agent_id();
  }
  heartbeat_interval_ =
      IntervalOr(r->heartbeat_interval_ms(), options_.heartbeat_interval);
  heartbeat_wait_ = heartbeat_interval_;
  lease_poll_interval_ =
      IntervalOr(r->lease_poll_interval_ms(), options_.lease_poll_interval);
  log_->Log(absl::StrCat(
      registrations_ == 1 ? "registered" : "registered again", " with ",
      planner_->address(), ": ", info.backend(), ", ", info.gpu_count(), " x ",
      info.gpu_name(), "; heartbeat every ", Show(heartbeat_interval_)));
}

void Agent::HeartbeatOnce(Backoff& backoff, CallPacing& pacing) {
  std::vector<int64_t> running;
  absl::Duration interval;
  {
    absl::MutexLock lock(&mutex_);
    auto wake = [this]() ABSL_SHARED_LOCKS_REQUIRED(mutex_) {
      return done_ || !registered_;
    };
    mutex_.AwaitWithTimeout(absl::Condition(&wake), heartbeat_wait_);
    if (done_ || !registered_) return;
    running.assign(running_.begin(), running_.end());
    interval = heartbeat_interval_;
  }
  const bool was_connected = planner_->Connected();
  const absl::Time sent = absl::Now();
  absl::StatusOr<v1::HeartbeatResponse> r =
      planner_->Heartbeat(AgentId(), running);
  const absl::Duration wait = pacing.After(interval, absl::Now() - sent,
                                           r.status());
  if (!r.ok()) {
    absl::MutexLock lock(&mutex_);
    heartbeat_wait_ = wait;
    if (r.status().code() != absl::StatusCode::kUnavailable &&
        PlannerSlowOrAway(r.status())) {
      // Reachable but slow or busy: it still knows us. Beat again later
      // (CallPacing), rather than add a registration to its load.
      log_->Log(absl::StrCat("heartbeat failed (", r.status().message(),
                             "): the planner is busy; next in ", Show(wait)));
      return;
    }
  }
  if (!r.ok()) {
    NeedRegistration(absl::StrCat(
        IsRetryable(r.status()) ? "planner unreachable"
                                : "planner does not know this agent",
        " (", r.status().message(), "): registering again"));
    return;
  }
  backoff.Reset();
  absl::MutexLock lock(&mutex_);
  heartbeat_wait_ = wait;
  // The planner paces its fleet (service/fleet_pace.h): longer
  // intervals as it grows.
  if (r->heartbeat_interval_ms() > 0 &&
      absl::Milliseconds(r->heartbeat_interval_ms()) != heartbeat_interval_) {
    heartbeat_interval_ = absl::Milliseconds(r->heartbeat_interval_ms());
    log_->Log(absl::StrCat("the planner asks for a heartbeat every ",
                           Show(heartbeat_interval_)));
  }
  if (r->lease_poll_interval_ms() > 0) {
    lease_poll_interval_ = absl::Milliseconds(r->lease_poll_interval_ms());
  }
  for (int64_t id : r->cancel_trials()) {
    if (running_.count(id) > 0 && cancelled_.insert(id).second) {
      log_->Log(absl::StrCat("planner cancelled trial ", id, ": killing it"));
    }
  }
  if (!was_connected && registered_) {
    // The connection broke since the last heartbeat (a planner restart, a
    // network outage): tell the planner who we are again.
    registered_ = false;
    log_->Log(
        "connection to the planner was lost and is back: registering "
        "again");
  }
}

// ------------------------------------------------------------- main loop --

bool Agent::WaitRegistered() {
  absl::MutexLock lock(&mutex_);
  auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mutex_) {
    return stopping_ || registered_;
  };
  mutex_.Await(absl::Condition(&ready));
  return !stopping_;
}

void Agent::ProbeAfterRegistration() {
  int64_t registration;
  {
    absl::MutexLock lock(&mutex_);
    registration = registrations_;
  }
  if (registration == probed_registration_) return;
  probed_registration_ = registration;
  absl::StatusOr<std::string> dir =
      MakeUniqueDirectory(options_.work_dir, "probes-");
  if (!dir.ok()) {
    log_->Log(absl::StrCat("probes skipped: ", dir.status().message()));
    return;
  }
  ProbeOptions probe;
  probe.trial_binary = options_.trial_binary;
  probe.backend = DeviceBackend();
  probe.ranks = options_.info.gpu_count();
  probe.work_dir = *dir;
  probe.time_limit = options_.probe_time_limit;
  absl::StatusOr<std::vector<v1::Probe>> probes = agents::RunProbes(
      probe,
      [this] {
        absl::MutexLock lock(&mutex_);
        return stopping_;
      },
      &children_);
  if (!probes.ok()) {
    log_->Log(absl::StrCat("probes failed: ", probes.status().message()));
    return;
  }
  Backoff backoff(options_.backoff);
  for (int attempt = 1; attempt <= kProbeReportAttempts; ++attempt) {
    absl::Status s = planner_->ReportProbes(AgentId(), *probes);
    if (s.ok()) {
      log_->Log(absl::StrCat("reported ", probes->size(), " probes"));
      (void)RemoveTree(*dir);
      return;
    }
    if (absl::IsNotFound(s)) {
      NeedRegistration(absl::StrCat("planner does not know this agent (",
                                    s.message(), "): registering again"));
      return;
    }
    if (!IsRetryable(s) || attempt == kProbeReportAttempts ||
        !SleepUnlessStopping(backoff.Next())) {
      log_->Log(absl::StrCat("probes not reported: ", s.message()));
      return;
    }
  }
}

Agent::ReportEnd Agent::Report(int64_t trial_id, const std::string& result_json,
                               std::string* refusal) {
  Backoff backoff(options_.backoff);
  while (true) {
    absl::Status s = planner_->ReportTrial(AgentId(), trial_id, result_json);
    if (s.ok() || absl::IsAlreadyExists(s)) {
      log_->Log(s.ok() ? absl::StrCat("reported trial ", trial_id)
                       : absl::StrCat("trial ", trial_id,
                                      " was already reported (by another "
                                      "agent of its gang)"));
      absl::MutexLock lock(&mutex_);
      ++trials_reported_;
      return ReportEnd::kDone;
    }
    // Only the planner's definite no drops a finished result: a planner
    // that is away, stalled or failing to store (whatever it said through
    // heartbeats meanwhile) gets the report again until it answers.
    if (IsDefiniteRefusal(s)) {
      *refusal = s.ToString();
      return ReportEnd::kDropped;
    }
    if (DrainOver()) return ReportEnd::kGaveUp;
    absl::Duration delay = backoff.Next();
    {
      absl::MutexLock lock(&mutex_);
      if (stopping_) delay = std::min(delay, drain_deadline_ - absl::Now());
    }
    log_->Log(absl::StrCat("reporting trial ", trial_id, " failed (",
                           s.message(), "): retrying in ", Show(delay)));
    absl::SleepFor(delay);
  }
}

void Agent::Settle(int64_t trial_id, ReportEnd end, absl::string_view refusal,
                   bool spooled) {
  if (end == ReportEnd::kGaveUp) return;
  absl::Status removed = absl::OkStatus();
  if (spooled) removed = spool_->Remove(trial_id);
  if (end == ReportEnd::kDropped) {
    log_->Log(absl::StrCat(
        "trial ", trial_id, ": result dropped (", refusal, ")",
        !spooled       ? ""
        : removed.ok() ? "; removed from the result spool"
                       : absl::StrCat("; could not remove it from the result "
                                      "spool: ",
                                      removed.message())));
  } else if (!removed.ok()) {
    log_->Log(absl::StrCat("trial ", trial_id,
                           ": reported, but could not remove it from the "
                           "result spool (",
                           removed.message(),
                           "); the next start reports it again"));
  }
}

void Agent::ReportSpooled() {
  absl::StatusOr<SpoolListing> listing = spool_->List();
  if (!listing.ok()) {
    log_->Log(
        absl::StrCat("result spool not read: ", listing.status().message()));
    return;
  }
  for (const absl::Status& error : listing->errors) {
    log_->Log(absl::StrCat("result spool: ", error.message()));
  }
  if (listing->results.empty()) return;
  std::vector<std::string> ids;
  for (const SpooledResult& r : listing->results) {
    ids.push_back(absl::StrCat(r.trial_id));
  }
  log_->Log(absl::StrCat("reporting ", listing->results.size(),
                         " result(s) left in the result spool ", spool_->dir(),
                         ": trial(s) ", absl::StrJoin(ids, ", ")));
  for (size_t i = 0; i < listing->results.size(); ++i) {
    const SpooledResult& r = listing->results[i];
    std::string refusal;
    const ReportEnd end = Report(r.trial_id, r.result_json, &refusal);
    if (end == ReportEnd::kGaveUp) {
      log_->Log(absl::StrCat("stopping: ", listing->results.size() - i,
                             " result(s) stay in the result spool for the "
                             "next start"));
      return;
    }
    Settle(r.trial_id, end, refusal, /*spooled=*/true);
  }
}

void Agent::Release(int64_t trial_id, absl::string_view reason,
                    bool infrastructure_failure) {
  Backoff backoff(options_.backoff);
  for (int attempt = 1; attempt <= kReleaseAttempts; ++attempt) {
    absl::Status s = planner_->ReleaseTrial(AgentId(), trial_id, reason,
                                            infrastructure_failure);
    if (s.ok() || !IsRetryable(s) || attempt == kReleaseAttempts) {
      log_->Log(s.ok()
                    ? absl::StrCat("handed trial ", trial_id, " back")
                    : absl::StrCat("could not hand trial ", trial_id, " back (",
                                   s.message(), "); its lease will expire"));
      return;
    }
    absl::SleepFor(backoff.Next());
  }
}

bool Agent::GangMemberWasLost(int64_t trial_id) {
  absl::Duration wait;
  {
    absl::MutexLock lock(&mutex_);
    wait = std::max(kGangLossWaitHeartbeats * heartbeat_interval_,
                    kGangLossMinWait);
  }
  // Logged outside the agent's lock, which the heartbeat thread needs.
  log_->Log(absl::StrCat("trial ", trial_id,
                         " crashed in a gang: waiting up to ", Show(wait),
                         " for the planner to say whether a member was lost"));
  absl::MutexLock lock(&mutex_);
  const auto cancelled_or_done =
      [this, trial_id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
        return cancelled_.count(trial_id) > 0 || done_;
      };
  mutex_.AwaitWithTimeout(absl::Condition(&cancelled_or_done), wait);
  return cancelled_.count(trial_id) > 0;
}

void Agent::RunLeasedTrial(const v1::TrialAssignment& a) {
  // The assignment's one conversion to domain types (assigned_trial.h).
  const AssignedTrial trial = AssignedTrialOf(a);
  const int64_t id = a.trial_id();
  {
    absl::MutexLock lock(&mutex_);
    running_.insert(id);
  }
  log_->Log(absl::StrFormat(
      "leased trial %d (study %d, node rank %d of %d, %d ranks here, "
      "layout %s)",
      id, a.study_id(), a.node_rank(), std::max<int64_t>(a.gang_size(), 1),
      a.ranks_per_node(),
      trial.layout.ok() ? FormatLayout(*trial.layout) : "(invalid layout)"));
  const TrialExecutionOptions run = ExecutionOptions();
  const TrialOutcome outcome = RunTrialAssignment(
      trial, run, [this, id] { return Cancelled(id) || DrainOver(); });
  switch (outcome.end) {
    case TrialEnd::kLeaseGone:
      log_->Log(absl::StrCat("trial ", id, ": ", outcome.summary,
                             "; nothing to report"));
      break;
    case TrialEnd::kStopped:
      if (Cancelled(id)) {
        log_->Log(absl::StrCat("trial ", id, " cancelled by the planner"));
      } else {
        log_->Log(absl::StrCat("trial ", id, ": drain timeout, killed"));
        Release(id,
                "agent stopping: the trial did not finish within the "
                "drain timeout");
      }
      break;
    case TrialEnd::kPartDone:
      log_->Log(absl::StrCat("trial ", id, ": ", outcome.summary));
      break;
    case TrialEnd::kInfrastructureFailure:
      log_->Log(absl::StrCat("trial ", id, ": ", outcome.summary,
                             "; handing it back to run again"));
      Release(id, outcome.summary, /*infrastructure_failure=*/true);
      break;
    case TrialEnd::kResult: {
      log_->Log(absl::StrCat("trial ", id, " ", outcome.summary));
      if (a.gang_size() > 1 && outcome.crash && GangMemberWasLost(id)) {
        log_->Log(absl::StrCat(
            "trial ", id,
            ": the planner ended its lease after the crash (a gang member "
            "was lost): the crash followed that loss and is not reported; "
            "the trial runs again"));
        break;
      }
      // On disk before the first report: a result the planner has not
      // taken survives the agent's stop, crash or restart.
      const absl::Status spooled = spool_->Put(id, outcome.result_json);
      if (!spooled.ok()) {
        log_->Log(absl::StrCat("trial ", id, ": result not spooled (",
                               spooled.message(),
                               "); it is reported from memory only"));
      }
      std::string refusal;
      const ReportEnd end = Report(id, outcome.result_json, &refusal);
      Settle(id, end, refusal, spooled.ok());
      if (end == ReportEnd::kGaveUp && spooled.ok()) {
        // The lease is kept, not handed back: a released trial is queued
        // again and the planner refuses a later report of it ("does not
        // hold its lease"), so the result would be lost and the trial run
        // twice. Kept, the lease lasts lease_timeout past the last
        // heartbeat, and a planner restart extends it: an agent started
        // again within it reports the spooled result at once. An agent
        // down longer costs the trial a lost lease (one attempt) and that
        // wait before it runs again; its next start's report is then
        // refused, dropped and removed from the spool. Handing the lease
        // back would mostly fail anyway: the report did not get through.
        log_->Log(absl::StrCat(
            "trial ", id,
            ": its report did not reach the planner within the drain "
            "timeout; the result stays in ",
            spool_->PathOf(id),
            " and its lease is kept, for the next start to report it"));
      } else if (end == ReportEnd::kGaveUp) {
        Release(id,
                "agent stopping: its report did not reach the planner "
                "within the drain timeout");
      }
      if (end == ReportEnd::kDone && outcome.ok &&
          !options_.keep_ok_trial_dirs && !outcome.work_dir.empty()) {
        (void)RemoveTree(outcome.work_dir);
      }
      break;
    }
  }
  Forget(id);
}

std::string Agent::DeviceBackend() const {
  return options_.device_backend.empty() ? options_.info.backend()
                                         : options_.device_backend;
}

TrialExecutionOptions Agent::ExecutionOptions() {
  TrialExecutionOptions run;
  run.agent_id = AgentId();
  run.trial_binary = options_.trial_binary;
  run.work_root = options_.work_dir;
  run.advertise_host = options_.info.address();
  run.default_backend = options_.info.backend();
  run.device_backend = DeviceBackend();
  run.planner = planner_;
  run.registry = &children_;
  run.kill_grace = options_.kill_grace;
  run.after_failure_grace = options_.after_failure_grace;
  run.command_policy = options_.command_policy;
  return run;
}

void Agent::RunLeasedProbe(const v1::TrialAssignment& a) {
  const int64_t id = a.collective_probe_id();
  log_->Log(absl::StrFormat(
      "leased cluster probe %d (node rank %d of %d, %d ranks here)", id,
      a.node_rank(), std::max<int64_t>(a.gang_size(), 1), a.ranks_per_node()));
  const TrialExecutionOptions run = ExecutionOptions();
  const CollectiveProbeOutcome outcome =
      RunCollectiveProbeAssignment(a, run, [this] { return DrainOver(); });
  log_->Log(absl::StrCat("cluster probe ", id, ": ", outcome.summary));
  if (outcome.report) {
    Backoff backoff(options_.backoff);
    for (int attempt = 1; attempt <= kProbeReportAttempts; ++attempt) {
      const absl::Status s =
          planner_->ReportCollectiveProbe(AgentId(), id, outcome.result_json);
      if (s.ok()) {
        log_->Log(absl::StrCat("reported cluster probe ", id));
        break;
      }
      if (!IsRetryable(s) || attempt == kProbeReportAttempts ||
          !SleepUnlessStopping(backoff.Next())) {
        log_->Log(
            absl::StrCat("cluster probe ", id, " not reported: ", s.message()));
        break;
      }
    }
  }
  if (outcome.ok && !options_.keep_ok_trial_dirs && !outcome.work_dir.empty()) {
    (void)RemoveTree(outcome.work_dir);
  }
}

absl::Status Agent::Run() {
  if (absl::Status s = MakeDirectories(options_.work_dir); !s.ok()) return s;
  if (options_.command_policy.run_as.has_value() &&
      ::chmod(options_.work_dir.c_str(), 0711) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot make the work folder ", options_.work_dir,
                     " traversable for the run-as user: ",
                     std::strerror(errno)));
  }
  absl::StatusOr<ResultSpool> spool = ResultSpool::Open(
      options_.spool_dir.empty() ? absl::StrCat(options_.work_dir, "/spool")
                                 : options_.spool_dir);
  if (!spool.ok()) return spool.status();
  spool_.emplace(*std::move(spool));
  log_->Log(absl::StrCat("starting: planner ", planner_->address(),
                         ", work dir ", options_.work_dir, ", result spool ",
                         spool_->dir(), ", trial binary ",
                         options_.trial_binary));
  std::thread heartbeats([this] { HeartbeatLoop(); });
  Backoff backoff(options_.backoff);
  CallPacing poll_pacing(CallPacingOptions{.max_stretch = 4});
  bool spool_reported = false;
  while (WaitRegistered()) {
    if (!spool_reported) {
      // Before the probes (minutes) and any new lease: the leases of these
      // results may still be held, for lease_timeout at most.
      spool_reported = true;
      ReportSpooled();
    }
    ProbeAfterRegistration();
    const absl::Time polled = absl::Now();
    absl::StatusOr<std::optional<v1::TrialAssignment>> lease =
        planner_->LeaseTrial(AgentId());
    const absl::Duration took = absl::Now() - polled;
    if (!lease.ok()) {
      if (IsLeaseGone(lease.status())) {
        NeedRegistration(absl::StrCat("lease refused (",
                                      lease.status().message(),
                                      "): registering again"));
        continue;
      }
      const absl::Duration delay = backoff.Next();
      log_->Log(absl::StrCat("lease failed (", lease.status().message(),
                             "): retrying in ", Show(delay)));
      SleepUnlessStopping(delay);
      continue;
    }
    backoff.Reset();
    if (!lease->has_value()) {
      absl::Duration poll;
      {
        absl::MutexLock lock(&mutex_);
        poll = lease_poll_interval_;
      }
      SleepUnlessStopping(poll_pacing.After(poll, took, absl::OkStatus()));
      continue;
    }
    if ((*lease)->collective_probe_id() > 0) {
      RunLeasedProbe(**lease);
    } else {
      RunLeasedTrial(**lease);
    }
  }
  {
    absl::MutexLock lock(&mutex_);
    done_ = true;
  }
  heartbeats.join();
  log_->Log("stopped");
  return absl::OkStatus();
}

}  // namespace tessera::agents
