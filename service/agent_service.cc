#include "service/agent_service.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "service/access.h"
#include "service/proto_mapping.h"
#include "service/unary.h"
#include "proto/principals.h"

namespace tessera::service {

absl::Status AgentServiceImpl::MayAct(
    const grpc::CallbackServerContext* context,
    const std::string& agent_id) const {
  return MayActAsAgent(CallerOf(callers_, *context), agent_id);
}

grpc::ServerUnaryReactor* AgentServiceImpl::Register(
    grpc::CallbackServerContext* context, const v1::RegisterRequest* request,
    v1::RegisterResponse* response) {
  return FinishUnaryInPool(
      *store_pool_, "agent", context, response,
      [this, context, request]() -> absl::StatusOr<v1::RegisterResponse> {
        const v1::AgentInfo& a = request->agent();
        TESSERA_RETURN_IF_ERROR(MayAct(context, a.agent_id()));
        if (a.gpu_count() < 1) {
          return absl::InvalidArgumentError(absl::StrCat(
              "agent.gpu_count: must offer at least one GPU or CPU rank, got ",
              a.gpu_count()));
        }
        TESSERA_ASSIGN_OR_RETURN(
            const db::Agent agent,
            leases_->Register(AgentRegistrationFromProto(a)));
        v1::RegisterResponse out;
        const Pace pace = leases_->TellPace();
        out.set_heartbeat_interval_ms(absl::ToInt64Milliseconds(pace.heartbeat));
        out.set_lease_poll_interval_ms(
            absl::ToInt64Milliseconds(pace.lease_poll));
        out.set_agent_id(agent.info.id);
        return out;
      });
}

grpc::ServerUnaryReactor* AgentServiceImpl::Heartbeat(
    grpc::CallbackServerContext* context, const v1::HeartbeatRequest* request,
    v1::HeartbeatResponse* response) {
  return FinishUnary(
      context, response, [&]() -> absl::StatusOr<v1::HeartbeatResponse> {
        TESSERA_RETURN_IF_ERROR(MayAct(context, request->agent_id()));
        TESSERA_ASSIGN_OR_RETURN(
            const std::vector<int64_t> stop,
            leases_->Heartbeat(request->agent_id(),
                               {request->running_trials().begin(),
                                request->running_trials().end()}));
        v1::HeartbeatResponse out;
        for (int64_t trial_id : stop) out.add_cancel_trials(trial_id);
        const Pace pace = leases_->TellPace();
        out.set_heartbeat_interval_ms(absl::ToInt64Milliseconds(pace.heartbeat));
        out.set_lease_poll_interval_ms(
            absl::ToInt64Milliseconds(pace.lease_poll));
        return out;
      });
}

grpc::ServerUnaryReactor* AgentServiceImpl::ReportProbes(
    grpc::CallbackServerContext* context,
    const v1::ReportProbesRequest* request,
    v1::ReportProbesResponse* /*response*/) {
  return FinishUnaryStatusInPool(
      *store_pool_, "agent", context, [this, context, request]() -> absl::Status {
    TESSERA_RETURN_IF_ERROR(MayAct(context, request->agent_id()));
    return leases_->ReportProbes(request->agent_id(),
                                 ProbesFromProto(*request));
  });
}

grpc::ServerUnaryReactor* AgentServiceImpl::LeaseTrial(
    grpc::CallbackServerContext* context, const v1::LeaseTrialRequest* request,
    v1::LeaseTrialResponse* response) {
  return FinishUnaryInPool(
      *store_pool_, "agent", context, response,
      [this, context, request]() -> absl::StatusOr<v1::LeaseTrialResponse> {
        TESSERA_RETURN_IF_ERROR(MayAct(context, request->agent_id()));
        TESSERA_ASSIGN_OR_RETURN(std::optional<v1::TrialAssignment> next,
                                 leases_->LeaseTrial(request->agent_id()));
        v1::LeaseTrialResponse out;
        if (next.has_value()) *out.mutable_assignment() = *std::move(next);
        return out;
      });
}

grpc::ServerUnaryReactor* AgentServiceImpl::ReportTrial(
    grpc::CallbackServerContext* context, const v1::ReportTrialRequest* request,
    v1::ReportTrialResponse* /*response*/) {
  return FinishUnaryStatusInPool(
      *store_pool_, "agent", context, [this, context, request]() -> absl::Status {
    TESSERA_RETURN_IF_ERROR(MayAct(context, request->agent_id()));
    return leases_->ReportTrial(request->agent_id(), request->trial_id(),
                                request->result_json());
  });
}

grpc::ServerUnaryReactor* AgentServiceImpl::ReleaseTrial(
    grpc::CallbackServerContext* context,
    const v1::ReleaseTrialRequest* request,
    v1::ReleaseTrialResponse* /*response*/) {
  return FinishUnaryStatusInPool(
      *store_pool_, "agent", context, [this, context, request]() -> absl::Status {
    TESSERA_RETURN_IF_ERROR(MayAct(context, request->agent_id()));
    return leases_->ReleaseTrial(request->agent_id(), request->trial_id(),
                                 request->reason(),
                                 request->infrastructure_failure());
  });
}

grpc::ServerUnaryReactor* AgentServiceImpl::ReportCollectiveProbe(
    grpc::CallbackServerContext* context,
    const v1::ReportCollectiveProbeRequest* request,
    v1::ReportCollectiveProbeResponse* /*response*/) {
  return FinishUnaryStatusInPool(
      *store_pool_, "agent", context, [this, context, request]() -> absl::Status {
    TESSERA_RETURN_IF_ERROR(MayAct(context, request->agent_id()));
    return leases_->ReportCollectiveProbe(request->agent_id(),
                                          request->collective_probe_id(),
                                          request->result_json());
  });
}

grpc::ServerUnaryReactor* AgentServiceImpl::Rendezvous(
    grpc::CallbackServerContext* context, const v1::RendezvousRequest* request,
    v1::RendezvousResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (absl::Status may = MayAct(context, request->agent_id()); !may.ok()) {
    reactor->Finish(ToGrpcStatus(may));
    return reactor;
  }
  // The request and response live until Finish.
  RendezvousCall call;
  call.agent_id = request->agent_id();
  call.trial_id = request->trial_id();
  call.collective_probe_id = request->collective_probe_id();
  call.data = request->data();
  call.wait = absl::Milliseconds(request->wait_ms());
  leases_->Rendezvous(call,
                      [reactor, response](absl::StatusOr<std::string> data) {
                        if (data.ok()) response->set_data(*std::move(data));
                        reactor->Finish(ToGrpcStatus(data.status()));
                      });
  return reactor;
}

}  // namespace tessera::service
