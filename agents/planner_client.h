// The agent's side of tessera.v1.AgentService (proto/tessera/v1/service.proto):
// one method per RPC, each with a deadline, errors as absl::Status with the
// planner's gRPC code (NOT_FOUND, FAILED_PRECONDITION, ALREADY_EXISTS, ...)
// or UNAVAILABLE / DEADLINE_EXCEEDED when the planner cannot be reached. The
// channel reconnects on its own within the given backoff bounds, so a
// planner that comes back is found again within about reconnect_max.
// Thread-safe.
//
//   std::unique_ptr<PlannerClient> planner =
//       PlannerClient::Connect("127.0.0.1:50051", {});
//   TESSERA_ASSIGN_OR_RETURN(v1::RegisterResponse r, planner->Register(info));
//   TESSERA_ASSIGN_OR_RETURN(std::optional<v1::TrialAssignment> a,
//                            planner->LeaseTrial(info.agent_id()));
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/security/credentials.h"
#include "tessera/v1/service.pb.h"

namespace tessera::agents {

struct PlannerClientOptions {
  // Every RPC's deadline (Rendezvous fetches add their wait).
  absl::Duration rpc_timeout = absl::Seconds(10);
  // The channel's own reconnection backoff (gRPC's default grows to 120 s,
  // far too long for an agent waiting for a restarted planner).
  absl::Duration reconnect_min = absl::Milliseconds(100);
  absl::Duration reconnect_max = absl::Seconds(5);
  // How long one connection attempt may take at least (gRPC's
  // GRPC_ARG_MIN_RECONNECT_BACKOFF_MS is this deadline, not a delay). At
  // 100 ms a loaded machine's TCP and HTTP/2 handshake with a planner just
  // restarted timed out attempt after attempt ("tcp handshaker shutdown")
  // until the agent was called gone (ResultSurvivalTest.
  // PlannerRestartsInARowLoseNoResult under a full ctest run).
  absl::Duration connect_timeout = absl::Seconds(2);
  // TLS and token (proto/transport_security.h); null: plaintext.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
};

class PlannerClient {
 public:
  // A client of the planner at `address` ("host:port"); connects lazily
  // (the first RPC), so this cannot fail.
  static std::unique_ptr<PlannerClient> Connect(
      const std::string& address, const PlannerClientOptions& options);
  ~PlannerClient();
  PlannerClient(const PlannerClient&) = delete;
  PlannerClient& operator=(const PlannerClient&) = delete;

  const std::string& address() const { return address_; }

  absl::StatusOr<v1::RegisterResponse> Register(const v1::AgentInfo& agent);
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      absl::string_view agent_id, const std::vector<int64_t>& running_trials);
  absl::Status ReportProbes(absl::string_view agent_id,
                            const std::vector<v1::Probe>& probes);
  // std::nullopt when the planner has nothing to run now.
  absl::StatusOr<std::optional<v1::TrialAssignment>> LeaseTrial(
      absl::string_view agent_id);
  absl::Status ReportTrial(absl::string_view agent_id, int64_t trial_id,
                           absl::string_view result_json);
  // Hands the lease back; with `infrastructure_failure` the trial ended by
  // no fault of its layout and is run again with an attempt counted.
  absl::Status ReleaseTrial(absl::string_view agent_id, int64_t trial_id,
                            absl::string_view reason,
                            bool infrastructure_failure = false);
  // Node rank 0 publishes the trial's rendezvous data (a cluster probe's
  // when collective_probe_id > 0; trial_id is then 0).
  absl::Status PublishRendezvous(absl::string_view agent_id, int64_t trial_id,
                                 absl::string_view data,
                                 int64_t collective_probe_id = 0);
  // The trial's (or probe's) rendezvous data, waiting up to `wait` for it on
  // the planner's side; "" when it has not been published yet.
  absl::StatusOr<std::string> FetchRendezvous(absl::string_view agent_id,
                                              int64_t trial_id,
                                              absl::Duration wait,
                                              int64_t collective_probe_id = 0);
  // Node rank 0 of a cluster probe reports its sweep.
  absl::Status ReportCollectiveProbe(absl::string_view agent_id,
                                     int64_t collective_probe_id,
                                     absl::string_view result_json);

  // Whether the connection is established right now (gRPC's READY). The
  // agent samples it before a heartbeat: a connection that was not up had
  // been lost (a planner restart or an outage) and the agent registers
  // again once the call gets through.
  bool Connected();

 private:
  struct Stub;
  PlannerClient(std::string address, const PlannerClientOptions& options);

  std::string address_;
  PlannerClientOptions options_;
  std::unique_ptr<Stub> stub_;
};

// A report, release or rendezvous refused because this agent no longer
// holds the lease: FAILED_PRECONDITION or NOT_FOUND.
bool IsLeaseGone(const absl::Status& status);

// The planner's definite no to a report, naming why (the trial was leased
// again, its study ended, the result is implausible, the caller may not):
// FAILED_PRECONDITION, NOT_FOUND, INVALID_ARGUMENT, PERMISSION_DENIED,
// OUT_OF_RANGE. Anything else (the planner away, stalled, its store
// failing, a credential problem) is no answer: the result is kept.
bool IsDefiniteRefusal(const absl::Status& status);

// An error worth the same call again later: UNAVAILABLE, DEADLINE_EXCEEDED,
// RESOURCE_EXHAUSTED, ABORTED, INTERNAL or UNKNOWN.
bool IsRetryable(const absl::Status& status);

}  // namespace tessera::agents
