#include "service/health.h"

#include "grpcpp/health_check_service_interface.h"
#include "tessera/v1/service.grpc.pb.h"

namespace tessera::service {

void EnableHealthService() { grpc::EnableDefaultHealthCheckService(true); }

std::vector<std::string> HealthServiceNames() {
  return {"", v1::PlannerService::service_full_name(),
          v1::AgentService::service_full_name()};
}

void SetServing(grpc::Server& server, bool serving) {
  grpc::HealthCheckServiceInterface* health = server.GetHealthCheckService();
  if (health == nullptr) return;
  for (const std::string& name : HealthServiceNames()) {
    health->SetServingStatus(name, serving);
  }
}

}  // namespace tessera::service
