#include "agents/planner_client.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <utility>

#include "tessera/v1/service.grpc.pb.h"

namespace tessera::agents {
namespace {

absl::Status ToAbsl(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

int Milliseconds(absl::Duration d) {
  return static_cast<int>(absl::ToInt64Milliseconds(d));
}

// One unary call of `method` with a deadline `timeout` from now.
template <typename Request, typename Response>
absl::Status Call(v1::AgentService::Stub& stub,
                  grpc::Status (v1::AgentService::Stub::*method)(
                      grpc::ClientContext*, const Request&, Response*),
                  const Request& request, Response* response,
                  absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       absl::ToChronoMilliseconds(timeout));
  return ToAbsl((stub.*method)(&context, request, response));
}

}  // namespace

struct PlannerClient::Stub {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::AgentService::Stub> service;
};

PlannerClient::PlannerClient(std::string address,
                             const PlannerClientOptions& options)
    : address_(std::move(address)), options_(options) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              Milliseconds(options.reconnect_min));
  // gRPC takes the "minimum reconnect backoff" for the least time a
  // connection attempt is given, not a backoff (subchannel.cc).
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
              Milliseconds(options.connect_timeout));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              Milliseconds(options.reconnect_max));
  stub_ = std::make_unique<Stub>();
  stub_->channel = grpc::CreateCustomChannel(
      address_,
      options.credentials != nullptr ? options.credentials
                                     : grpc::InsecureChannelCredentials(),
      args);
  stub_->service = v1::AgentService::NewStub(stub_->channel);
}

PlannerClient::~PlannerClient() = default;

std::unique_ptr<PlannerClient> PlannerClient::Connect(
    const std::string& address, const PlannerClientOptions& options) {
  return std::unique_ptr<PlannerClient>(new PlannerClient(address, options));
}

absl::StatusOr<v1::RegisterResponse> PlannerClient::Register(
    const v1::AgentInfo& agent) {
  v1::RegisterRequest request;
  *request.mutable_agent() = agent;
  v1::RegisterResponse response;
  absl::Status s = Call(*stub_->service, &v1::AgentService::Stub::Register,
                        request, &response, options_.rpc_timeout);
  if (!s.ok()) return s;
  return response;
}

absl::StatusOr<v1::HeartbeatResponse> PlannerClient::Heartbeat(
    absl::string_view agent_id, const std::vector<int64_t>& running_trials) {
  v1::HeartbeatRequest request;
  request.set_agent_id(std::string(agent_id));
  for (int64_t id : running_trials) request.add_running_trials(id);
  v1::HeartbeatResponse response;
  absl::Status s = Call(*stub_->service, &v1::AgentService::Stub::Heartbeat,
                        request, &response, options_.rpc_timeout);
  if (!s.ok()) return s;
  return response;
}

absl::Status PlannerClient::ReportProbes(absl::string_view agent_id,
                                         const std::vector<v1::Probe>& probes) {
  v1::ReportProbesRequest request;
  request.set_agent_id(std::string(agent_id));
  for (const v1::Probe& p : probes) *request.add_probes() = p;
  v1::ReportProbesResponse response;
  return Call(*stub_->service, &v1::AgentService::Stub::ReportProbes, request,
              &response, options_.rpc_timeout);
}

absl::StatusOr<std::optional<v1::TrialAssignment>> PlannerClient::LeaseTrial(
    absl::string_view agent_id) {
  v1::LeaseTrialRequest request;
  request.set_agent_id(std::string(agent_id));
  v1::LeaseTrialResponse response;
  absl::Status s = Call(*stub_->service, &v1::AgentService::Stub::LeaseTrial,
                        request, &response, options_.rpc_timeout);
  if (!s.ok()) return s;
  if (!response.has_assignment()) return std::nullopt;
  return response.assignment();
}

absl::Status PlannerClient::ReportTrial(absl::string_view agent_id,
                                        int64_t trial_id,
                                        absl::string_view result_json) {
  v1::ReportTrialRequest request;
  request.set_agent_id(std::string(agent_id));
  request.set_trial_id(trial_id);
  request.set_result_json(std::string(result_json));
  v1::ReportTrialResponse response;
  return Call(*stub_->service, &v1::AgentService::Stub::ReportTrial, request,
              &response, options_.rpc_timeout);
}

absl::Status PlannerClient::ReleaseTrial(absl::string_view agent_id,
                                         int64_t trial_id,
                                         absl::string_view reason,
                                         bool infrastructure_failure) {
  v1::ReleaseTrialRequest request;
  request.set_agent_id(std::string(agent_id));
  request.set_trial_id(trial_id);
  request.set_reason(std::string(reason));
  request.set_infrastructure_failure(infrastructure_failure);
  v1::ReleaseTrialResponse response;
  return Call(*stub_->service, &v1::AgentService::Stub::ReleaseTrial, request,
              &response, options_.rpc_timeout);
}

absl::Status PlannerClient::PublishRendezvous(absl::string_view agent_id,
                                              int64_t trial_id,
                                              absl::string_view data,
                                              int64_t collective_probe_id) {
  v1::RendezvousRequest request;
  request.set_agent_id(std::string(agent_id));
  request.set_trial_id(trial_id);
  request.set_collective_probe_id(collective_probe_id);
  request.set_data(std::string(data));
  v1::RendezvousResponse response;
  return Call(*stub_->service, &v1::AgentService::Stub::Rendezvous, request,
              &response, options_.rpc_timeout);
}

absl::StatusOr<std::string> PlannerClient::FetchRendezvous(
    absl::string_view agent_id, int64_t trial_id, absl::Duration wait,
    int64_t collective_probe_id) {
  v1::RendezvousRequest request;
  request.set_agent_id(std::string(agent_id));
  request.set_trial_id(trial_id);
  request.set_collective_probe_id(collective_probe_id);
  request.set_wait_ms(absl::ToInt64Milliseconds(wait));
  v1::RendezvousResponse response;
  absl::Status s = Call(*stub_->service, &v1::AgentService::Stub::Rendezvous,
                        request, &response, options_.rpc_timeout + wait);
  if (!s.ok()) return s;
  return response.data();
}

absl::Status PlannerClient::ReportCollectiveProbe(
    absl::string_view agent_id, int64_t collective_probe_id,
    absl::string_view result_json) {
  v1::ReportCollectiveProbeRequest request;
  request.set_agent_id(std::string(agent_id));
  request.set_collective_probe_id(collective_probe_id);
  request.set_result_json(std::string(result_json));
  v1::ReportCollectiveProbeResponse response;
  return Call(*stub_->service, &v1::AgentService::Stub::ReportCollectiveProbe,
              request, &response, options_.rpc_timeout);
}

bool PlannerClient::Connected() {
  return stub_->channel->GetState(/*try_to_connect=*/false) ==
         GRPC_CHANNEL_READY;
}

bool IsLeaseGone(const absl::Status& status) {
  return absl::IsFailedPrecondition(status) || absl::IsNotFound(status);
}

bool IsDefiniteRefusal(const absl::Status& status) {
  return absl::IsFailedPrecondition(status) || absl::IsNotFound(status) ||
         absl::IsInvalidArgument(status) || absl::IsPermissionDenied(status) ||
         absl::IsOutOfRange(status);
}

bool IsRetryable(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status) ||
         absl::IsResourceExhausted(status) || absl::IsAborted(status) ||
         absl::IsInternal(status) || absl::IsUnknown(status);
}

}  // namespace tessera::agents
