// Test harness of the planner service: a real PlannerServer on 127.0.0.1:0
// over a temporary database with a hand-driven clock, gRPC stubs of both
// services, and a scripted agent (an AgentService client that registers,
// leases and reports TrialResult JSON the test composes).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/trial_result.h"
#include "gtest/gtest.h"
#include "service/server.h"
#include "tessera/v1/service.grpc.pb.h"

namespace tessera::service::testing {

// A directory removed with everything in it at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  std::string File(absl::string_view name) const;

 private:
  std::filesystem::path path_;
};

// A clock the test moves by hand (starts at a fixed date).
class ManualClock {
 public:
  absl::Time Now() const;
  void Advance(absl::Duration d);
  db::Clock AsClock() const;

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_) = absl::FromUnixSeconds(1'700'000'000);
};

// Short intervals, no reaper thread (tests call Reap), the manual clock.
PlannerOptions TestOptions(const std::string& db_path,
                           const ManualClock& clock);

// A started server with a client channel.
struct TestServer {
  std::unique_ptr<PlannerServer> server;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::PlannerService::Stub> planner;

  Planner& core() { return server->planner(); }
  // One reaper pass and the study advances it asked for.
  void Reap() {
    core().leases().Reap();
    core().studies().WaitForAdvances();
  }
};

TestServer StartServer(const PlannerOptions& options);

// A tiny Llama on nodes x gpus_per_node H100s, trials on cpu agents.
v1::StudySpec TinySpec(int64_t nodes, int64_t gpus_per_node);

// An AgentService client of `server`. After a report or a hand-back it
// waits for the planner's advancer, so that the next lease sees its effect.
class ScriptedAgent {
 public:
  ScriptedAgent(TestServer& server, std::string id, std::string backend = "cpu",
                int64_t ranks = 2);

  grpc::Status Register();
  grpc::Status Heartbeat(const std::vector<int64_t>& running,
                         v1::HeartbeatResponse* response = nullptr);
  grpc::Status ReportProbes(const std::vector<v1::Probe>& probes);
  // The assignment, or nullopt when none (a failed call fails the test).
  std::optional<v1::TrialAssignment> Lease();
  grpc::Status Report(int64_t trial_id, const std::string& result_json);
  grpc::Status Release(int64_t trial_id, const std::string& reason,
                       bool infrastructure_failure = false);
  // The rendezvous of a trial, or of a cluster probe when probe_id > 0.
  grpc::Status Publish(int64_t trial_id, const std::string& data,
                       int64_t probe_id = 0);
  grpc::Status Fetch(int64_t trial_id, int64_t wait_ms, std::string* data,
                     int64_t probe_id = 0);
  // A cluster probe's sweep (waits for the advancer as Report does).
  grpc::Status ReportSweep(int64_t probe_id, const std::string& json);

  const std::string& id() const { return id_; }

 private:
  std::unique_ptr<v1::AgentService::Stub> stub_;
  Planner* planner_;
  std::string id_;
  std::string backend_;
  int64_t ranks_;
};

// An ok result of `a` whose step takes `step_time_s` (tokens/s follow).
std::string OkResultJson(const v1::TrialAssignment& a, double step_time_s);
// A failed result ("oom", "crash", ...) with `reason`.
std::string FailedResultJson(const v1::TrialAssignment& a,
                             absl::string_view status,
                             absl::string_view reason);

// Calls with a deadline of a few seconds.
std::unique_ptr<grpc::ClientContext> Context();

v1::GetStudyResponse GetStudy(TestServer& s, int64_t id);
std::vector<v1::Trial> ListTrials(TestServer& s, int64_t study_id);
int64_t CountStudies(TestServer& s);

}  // namespace tessera::service::testing
