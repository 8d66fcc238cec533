#include "planner/service/agent_service.h"

#include "planner/service/unary.h"

namespace tessera::service {

grpc::ServerUnaryReactor* AgentServiceImpl::Register(
    grpc::CallbackServerContext* context, const v1::RegisterRequest* request,
    v1::RegisterResponse* response) {
  return FinishUnary(context, response,
                     [&] { return planner_->Register(*request); });
}

grpc::ServerUnaryReactor* AgentServiceImpl::Heartbeat(
    grpc::CallbackServerContext* context, const v1::HeartbeatRequest* request,
    v1::HeartbeatResponse* response) {
  return FinishUnary(context, response,
                     [&] { return planner_->Heartbeat(*request); });
}

grpc::ServerUnaryReactor* AgentServiceImpl::ReportProbes(
    grpc::CallbackServerContext* context,
    const v1::ReportProbesRequest* request,
    v1::ReportProbesResponse* /*response*/) {
  return FinishUnaryStatus(context,
                           [&] { return planner_->ReportProbes(*request); });
}

grpc::ServerUnaryReactor* AgentServiceImpl::LeaseTrial(
    grpc::CallbackServerContext* context, const v1::LeaseTrialRequest* request,
    v1::LeaseTrialResponse* response) {
  return FinishUnary(context, response,
                     [&] { return planner_->LeaseTrial(*request); });
}

grpc::ServerUnaryReactor* AgentServiceImpl::ReportTrial(
    grpc::CallbackServerContext* context, const v1::ReportTrialRequest* request,
    v1::ReportTrialResponse* /*response*/) {
  return FinishUnaryStatus(context,
                           [&] { return planner_->ReportTrial(*request); });
}

grpc::ServerUnaryReactor* AgentServiceImpl::ReleaseTrial(
    grpc::CallbackServerContext* context,
    const v1::ReleaseTrialRequest* request,
    v1::ReleaseTrialResponse* /*response*/) {
  return FinishUnaryStatus(context,
                           [&] { return planner_->ReleaseTrial(*request); });
}

grpc::ServerUnaryReactor* AgentServiceImpl::ReportCollectiveProbe(
    grpc::CallbackServerContext* context,
    const v1::ReportCollectiveProbeRequest* request,
    v1::ReportCollectiveProbeResponse* /*response*/) {
  return FinishUnaryStatus(
      context, [&] { return planner_->ReportCollectiveProbe(*request); });
}

grpc::ServerUnaryReactor* AgentServiceImpl::Rendezvous(
    grpc::CallbackServerContext* context, const v1::RendezvousRequest* request,
    v1::RendezvousResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // The request and response live until Finish.
  planner_->Rendezvous(*request,
                       [reactor, response](absl::StatusOr<std::string> data) {
                         if (data.ok()) response->set_data(*std::move(data));
                         reactor->Finish(ToGrpcStatus(data.status()));
                       });
  return reactor;
}

}  // namespace tessera::service
