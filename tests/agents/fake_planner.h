// A small in-test AgentService over real gRPC on a loopback port: it keeps
// agents, leases, reports and rendezvous data in memory with the planner's
// status codes (NOT_FOUND for an unknown agent or trial, FAILED_PRECONDITION
// for a lease the agent does not hold, ALREADY_EXISTS for a second report,
// DEADLINE_EXCEEDED for a rendezvous fetch that waited in vain). Tests
// script it (queue an assignment, cancel a trial, forget every agent,
// restart on the same port) and read back what the agents did. It is a test
// harness for the agent's side of the protocol, not the planner.
//
//   FakePlanner planner;
//   planner.Queue(assignment, {"agent-a"});
//   ... run an agent against planner.address() ...
//   ASSERT_TRUE(planner.WaitFor([&] { return planner.reports().size() == 1;
//   }));
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tessera/v1/service.grpc.pb.h"

namespace tessera::agents::testing {

class FakePlanner final : public v1::AgentService::Service {
 public:
  // Serves on 127.0.0.1 at a free port.
  FakePlanner();
  ~FakePlanner() override;

  std::string address() const;

  // The planner's availability: Shutdown() closes the port (agents see
  // UNAVAILABLE), Start() serves again on the same port with the same state.
  void Shutdown();
  void Start();

  // What Register answers.
  void SetIntervals(int64_t heartbeat_ms, int64_t lease_poll_ms);

  // `assignment` goes to the first of `agents` that polls LeaseTrial (each
  // agent of a gang gets its own copy: queue one per node rank), and the
  // lease is held by all of `agents` from now on.
  void Queue(const v1::TrialAssignment& assignment,
             const std::vector<std::string>& agents);
  // Marks `agents` as holding `trial_id`'s lease without any LeaseTrial
  // (a cluster probe's as -probe_id, for its rendezvous).
  void Hold(int64_t trial_id, const std::vector<std::string>& agents);
  // Ends `trial_id`'s lease without telling its holders (an expiry).
  void Revoke(int64_t trial_id);
  // The next heartbeat of each holder lists `trial_id` in cancel_trials.
  void Cancel(int64_t trial_id);
  // Forgets every registered agent (their next call is NOT_FOUND).
  void ForgetAgents();
  // Every ReportTrial fails with `code` until FailReports(OK) (a planner
  // whose store is read-only answers UNAVAILABLE); each is still counted.
  void FailReports(grpc::StatusCode code);
  // ReportTrial calls so far, failed ones included.
  int64_t report_attempts() const;

  struct Report {
    std::string agent_id;
    int64_t trial_id = 0;
    std::string result_json;
  };
  std::vector<Report> reports() const;
  std::vector<v1::ReleaseTrialRequest> releases() const;
  int64_t registrations(const std::string& agent_id) const;
  std::vector<v1::Probe> probes(const std::string& agent_id) const;
  // Every heartbeat's running_trials, oldest first.
  std::vector<std::vector<int64_t>> heartbeats(
      const std::string& agent_id) const;
  std::optional<v1::AgentInfo> agent(const std::string& agent_id) const;

  // Polls `condition` until it holds or `timeout` passes.
  static bool WaitFor(const std::function<bool()>& condition,
                      absl::Duration timeout = absl::Seconds(20));

  // AgentService.
  grpc::Status Register(grpc::ServerContext*, const v1::RegisterRequest*,
                        v1::RegisterResponse*) override;
  grpc::Status Heartbeat(grpc::ServerContext*, const v1::HeartbeatRequest*,
                         v1::HeartbeatResponse*) override;
  grpc::Status ReportProbes(grpc::ServerContext*,
                            const v1::ReportProbesRequest*,
                            v1::ReportProbesResponse*) override;
  grpc::Status LeaseTrial(grpc::ServerContext*, const v1::LeaseTrialRequest*,
                          v1::LeaseTrialResponse*) override;
  grpc::Status ReportTrial(grpc::ServerContext*, const v1::ReportTrialRequest*,
                           v1::ReportTrialResponse*) override;
  grpc::Status ReleaseTrial(grpc::ServerContext*,
                            const v1::ReleaseTrialRequest*,
                            v1::ReleaseTrialResponse*) override;
  grpc::Status Rendezvous(grpc::ServerContext*, const v1::RendezvousRequest*,
                          v1::RendezvousResponse*) override;

 private:
  struct Queued {
    v1::TrialAssignment assignment;
    std::vector<std::string> agents;
  };
  grpc::Status KnownAgent(const std::string& agent_id) const
      ABSL_SHARED_LOCKS_REQUIRED(mutex_);
  bool Holds(int64_t trial_id, const std::string& agent_id) const
      ABSL_SHARED_LOCKS_REQUIRED(mutex_);

  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;

  mutable absl::Mutex mutex_;
  int64_t heartbeat_ms_ ABSL_GUARDED_BY(mutex_) = 100;
  int64_t lease_poll_ms_ ABSL_GUARDED_BY(mutex_) = 50;
  std::map<std::string, v1::AgentInfo> agents_ ABSL_GUARDED_BY(mutex_);
  std::map<std::string, int64_t> registrations_ ABSL_GUARDED_BY(mutex_);
  std::map<std::string, std::vector<v1::Probe>> probes_ ABSL_GUARDED_BY(mutex_);
  std::map<std::string, std::vector<std::vector<int64_t>>> heartbeats_
      ABSL_GUARDED_BY(mutex_);
  std::vector<Queued> queue_ ABSL_GUARDED_BY(mutex_);
  std::map<int64_t, std::set<std::string>> holders_ ABSL_GUARDED_BY(mutex_);
  std::map<std::string, std::set<int64_t>> cancels_ ABSL_GUARDED_BY(mutex_);
  std::vector<Report> reports_ ABSL_GUARDED_BY(mutex_);
  grpc::StatusCode fail_reports_ ABSL_GUARDED_BY(mutex_) = grpc::StatusCode::OK;
  int64_t report_attempts_ ABSL_GUARDED_BY(mutex_) = 0;
  std::set<int64_t> reported_ ABSL_GUARDED_BY(mutex_);
  std::vector<v1::ReleaseTrialRequest> releases_ ABSL_GUARDED_BY(mutex_);
  std::map<int64_t, std::string> rendezvous_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace tessera::agents::testing
