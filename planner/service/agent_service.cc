#include "planner/service/agent_service.h"

#include "core/status_macros.h"
#include "planner/service/access.h"
#include "planner/service/unary.h"
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
  return FinishUnary(
      context, response, [&]() -> absl::StatusOr<v1::RegisterResponse> {
        TESSERA_RETURN_IF_ERROR(MayAct(context, request->agent().agent_id()));
        return planner_->Register(*request);
      });
}

grpc::ServerUnaryReactor* AgentServiceImpl::Heartbeat(
    grpc::CallbackServerContext* context, const v1::HeartbeatRequest* request,
    v1::HeartbeatResponse* response) {
  return FinishUnary(
      context, response, [&]() -> absl::StatusOr<v1::HeartbeatResponse> {
        TESSERA_RETURN_IF_ERROR(MayAct(context, request->agent_id()));
        return planner_->Heartbeat(*request);
      });
}

grpc::ServerUnaryReactor* AgentServiceImpl::ReportProbes(
    grpc::CallbackServerContext* context,
    const v1::ReportProbesRequest* request,
    v1::ReportProbesResponse* /*response*/) {
  return FinishUnaryStatus(context, [&]() -> absl::Status {
    TESSERA_RETURN_IF_ERROR(MayAct(context, request->agent_id()));
    return planner_->ReportProbes(*request);
  });
}

grpc::ServerUnaryReactor* AgentServiceImpl::LeaseTrial(
    grpc::CallbackServerContext* context, const v1::LeaseTrialRequest* request,
    v1::LeaseTrialResponse* response) {
  return FinishUnary(
      context, response, [&]() -> absl::StatusOr<v1::LeaseTrialResponse> {
        TESSERA_RETURN_IF_ERROR(MayAct(context, request->agent_id()));
        return planner_->LeaseTrial(*request);
      });
}

grpc::ServerUnaryReactor* AgentServiceImpl::ReportTrial(
    grpc::CallbackServerContext* context, const v1::ReportTrialRequest* request,
    v1::ReportTrialResponse* /*response*/) {
  return FinishUnaryStatus(context, [&]() -> absl::Status {
    TESSERA_RETURN_IF_ERROR(MayAct(context, request->agent_id()));
    return planner_->ReportTrial(*request);
  });
}

grpc::ServerUnaryReactor* AgentServiceImpl::ReleaseTrial(
    grpc::CallbackServerContext* context,
    const v1::ReleaseTrialRequest* request,
    v1::ReleaseTrialResponse* /*response*/) {
  return FinishUnaryStatus(context, [&]() -> absl::Status {
    TESSERA_RETURN_IF_ERROR(MayAct(context, request->agent_id()));
    return planner_->ReleaseTrial(*request);
  });
}

grpc::ServerUnaryReactor* AgentServiceImpl::ReportCollectiveProbe(
    grpc::CallbackServerContext* context,
    const v1::ReportCollectiveProbeRequest* request,
    v1::ReportCollectiveProbeResponse* /*response*/) {
  return FinishUnaryStatus(context, [&]() -> absl::Status {
    TESSERA_RETURN_IF_ERROR(MayAct(context, request->agent_id()));
    return planner_->ReportCollectiveProbe(*request);
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
  planner_->Rendezvous(*request,
                       [reactor, response](absl::StatusOr<std::string> data) {
                         if (data.ok()) response->set_data(*std::move(data));
                         reactor->Finish(ToGrpcStatus(data.status()));
                       });
  return reactor;
}

}  // namespace tessera::service
