// Simulated agents for the fleet bench: thousands of agents on async gRPC
// (the callback API) driven by one scheduler thread, each behaving as
// tessera-agent does (agents/agent.h): it registers (again after a failed
// heartbeat or a refused lease, with exponential backoff and jitter while
// the planner cannot be reached), heartbeats with its running trial every
// interval the planner gives it (RegisterResponse, HeartbeatResponse),
// polls LeaseTrial while idle, "runs" a leased trial for trial_ms (a gang
// trial after its rendezvous: node rank 0 publishes, the others fetch),
// stops a trial a heartbeat cancels, and reports a synthetic ok result from
// node rank 0, retrying until the planner takes it or refuses it for good.
// It paces itself with tessera-agent's rule (agents/call_pacing.h: jittered
// intervals, stretched while the planner is slow) and its connection
// settings (a connection attempt may take connect_timeout).
// Each agent has its own channel (its own TCP connection), or shares one
// with agents_per_channel - 1 others.
//
//   SimulatedFleet fleet(planner_address, options);
//   fleet.Start();
//   ...
//   fleet.Stop();
//   FleetTally tally = fleet.TakeTally();
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "tessera/v1/service.grpc.pb.h"

namespace tessera::bench {

struct FleetOptions {
  int64_t agents = 500;
  int64_t agents_per_channel = 1;
  int64_t first_agent = 0;  // agent ids sim-<first_agent> onwards
  // How long a leased trial runs before its report: `trial` times a factor
  // in [1 - trial_spread, 1 + trial_spread], uniform, fixed per trial id
  // (every member of a gang runs it as long). Real trials differ by layout
  // (steps times a step time that varies several-fold within a study); 0
  // runs every trial exactly `trial`, so a rung's trials, leased within a
  // poll interval, all report within it: the worst burst.
  absl::Duration trial = absl::Seconds(30);
  double trial_spread = 0;
  // Intervals the agents use until the planner says one (and when it says
  // 0); override: use these whatever the planner says.
  absl::Duration heartbeat_interval = absl::Seconds(5);
  absl::Duration lease_poll_interval = absl::Seconds(1);
  bool override_intervals = false;
  // Registrations spread uniformly over this (zero: all at once, as after a
  // cluster-wide restart).
  absl::Duration start_spread = absl::ZeroDuration();
  absl::Duration rpc_deadline = absl::Seconds(10);
  // gRPC's minimum connect timeout (agents/planner_client.h's default).
  absl::Duration connect_timeout = absl::Seconds(2);
  // Backoff after a failed call (agents/backoff.h's defaults).
  absl::Duration backoff_initial = absl::Milliseconds(100);
  absl::Duration backoff_max = absl::Seconds(5);
  uint64_t seed = 1;
  // Agents register and heartbeat but poll for no trial until
  // ReleaseLeases: the studies see every agent and queue a whole rung
  // before the first lease (a backlog, to measure ingestion from a full
  // queue).
  bool hold_leases = false;
};

// One call as the agent saw it.
struct CallSample {
  int64_t start_ns = 0;  // steady clock
  float ms = 0;
  bool ok = true;
};

// What the fleet did.
struct FleetTally {
  std::map<std::string, std::vector<CallSample>> calls;  // by RPC name
  // ReportTrial answered OK (or ALREADY_EXISTS to a retry: stored by the
  // call whose answer was lost).
  std::set<int64_t> acked_trials;
  std::vector<int64_t> ack_ns;     // when each was acknowledged (steady)
  int64_t duplicate_acks = 0;      // a trial acknowledged twice
  int64_t reports_refused = 0;     // definite refusals (result dropped)
  // A heartbeat stopped a trial this agent was to report before it ended:
  // its lease was lost (or its study ended).
  int64_t running_trials_cancelled = 0;
  int64_t registrations = 0;
  int64_t leases_granted = 0;  // LeaseTrial answered with a trial
  int64_t leases_empty = 0;    // LeaseTrial answered OK with nothing to run
  int64_t heartbeat_interval_ms = 0;  // the last the planner told
  int64_t lease_poll_interval_ms = 0;
  std::string first_error;
};

class SimulatedFleet {
 public:
  SimulatedFleet(std::string address, FleetOptions options);
  // Stops the fleet.
  ~SimulatedFleet();
  SimulatedFleet(const SimulatedFleet&) = delete;
  SimulatedFleet& operator=(const SimulatedFleet&) = delete;

  // Creates the channels and starts the scheduler: agents register.
  void Start();
  // No new calls; calls in flight are awaited (cancelled past the RPC
  // deadline), rendezvous fetches cancelled at once. Idempotent.
  void Stop();
  // With FleetOptions::hold_leases: from now on idle agents poll for
  // trials (each at its next poll, within a poll interval).
  void ReleaseLeases();
  // Agents registered at least once so far.
  int64_t registered() const;
  // The agents' steady-clock time of the last registration so far.
  int64_t last_registration_ns() const;
  // After Stop: what happened (moved out).
  FleetTally TakeTally();

 private:
  enum class Main { kStarting, kIdle, kLeasing, kMeeting, kRunning,
                    kReporting };
  enum class Timer : uint8_t { kRegister, kHeartbeat, kMain };
  struct Agent {
    std::string id;
    v1::AgentService::Stub* stub = nullptr;
    bool registered = false;
    bool registering = false;
    bool ever_registered = false;
    bool heartbeat_busy = false;
    absl::Duration heartbeat_interval;
    absl::Duration poll_interval;
    Main main = Main::kStarting;
    uint32_t main_generation = 0;  // a kMain timer of another is stale
    uint32_t heartbeat_generation = 0;  // likewise for kHeartbeat
    std::optional<v1::TrialAssignment> trial;  // leased, meeting or running
    int register_failures = 0;
    int main_failures = 0;
    int64_t slow_heartbeats = 0;  // in a row (agents/call_pacing.h)
    int64_t slow_polls = 0;
  };
  struct Due {
    int64_t at_ns;
    int64_t agent;
    Timer timer;
    uint32_t generation;
    bool operator>(const Due& o) const { return at_ns > o.at_ns; }
  };

  void Loop();
  // Runs on the scheduler thread: completions posted by gRPC's threads.
  void Post(std::function<void()> done);
  void Schedule(int64_t agent, Timer timer, absl::Duration after);
  void Fire(const Due& due);
  void Register(int64_t i);
  void Heartbeat(int64_t i);
  void Lease(int64_t i);
  void Meet(int64_t i, absl::Duration waited);
  void Report(int64_t i);
  void StartRunning(int64_t i);
  // How long trial `trial_id` runs (FleetOptions::trial_spread).
  absl::Duration TrialDuration(int64_t trial_id) const;
  void BecomeIdle(int64_t i, absl::Duration poll_after);
  void NeedRegistration(int64_t i);
  absl::Duration Backoff(int failures);
  // The wait before the next heartbeat or poll after the call just
  // finished (last_took_), as tessera-agent paces it.
  absl::Duration PaceNext(absl::Duration interval, const absl::Status& status,
                          int64_t& slow_calls, double max_stretch);
  static constexpr double kHeartbeatStretch = 2;  // as agents/agent.cc
  static constexpr double kPollStretch = 4;
  void Record(const std::string& rpc, int64_t start_ns,
              const grpc::Status& status);
  // Starts an async call `rpc` whose completion runs `done` on the
  // scheduler thread.
  template <typename Request, typename Response, typename Method>
  void Call(const std::string& rpc, Agent& agent, Request request,
            Method method, absl::Duration deadline,
            std::function<void(const grpc::Status&, Response&)> done);

  const std::string address_;
  const FleetOptions options_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<v1::AgentService::Stub>> stubs_;

  // Scheduler thread only.
  bool holding_leases_ = false;
  std::vector<Agent> agents_;
  std::priority_queue<Due, std::vector<Due>, std::greater<Due>> timers_;
  std::mt19937_64 rng_;
  FleetTally tally_;
  // Calls in flight, and whether Stop awaits each (not a rendezvous fetch).
  std::unordered_map<grpc::ClientContext*, bool> in_flight_;
  bool cancelled_in_flight_ = false;
  int64_t stopped_ns_ = 0;    // when Stop was first seen (steady clock)
  absl::Duration last_took_;  // of the call whose completion runs now

  mutable absl::Mutex mu_;
  std::vector<std::function<void()>> posted_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t registered_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t last_registration_ns_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread scheduler_;
};

}  // namespace tessera::bench
