// The standard gRPC health service (grpc.health.v1.Health, Check and Watch)
// on the planner's own port, as gRPC's default implementation serves it.
// Names served: "" (the whole server), "tessera.v1.PlannerService" and
// "tessera.v1.AgentService"; any other name is NOT_FOUND (Check) or
// SERVICE_UNKNOWN (Watch).
//
//   EnableHealthService();  // before the ServerBuilder is made
//   grpc::ServerBuilder builder; ... server = builder.BuildAndStart();
//   SetServing(*server, true);   // the store is open, the threads run
//   ...
//   SetServing(*server, false);  // shutting down: watchers see NOT_SERVING
#pragma once

#include <string>
#include <vector>

#include "grpcpp/server.h"

namespace tessera::service {

// Makes every grpc::Server built afterwards in this process serve the health
// service (a process-wide gRPC setting).
void EnableHealthService();

// The service names whose health the planner reports.
std::vector<std::string> HealthServiceNames();

// SERVING or NOT_SERVING for every name of HealthServiceNames(). No effect
// on a server built before EnableHealthService.
void SetServing(grpc::Server& server, bool serving);

}  // namespace tessera::service
