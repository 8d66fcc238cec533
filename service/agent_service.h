// tessera.v1.AgentService over the leases (leases.h; callback API): each
// handler checks that the caller may act as the agent it names (access.h),
// translates the request into the leases' terms and the answer back.
// Rendezvous fetches finish when the data arrives or their wait runs out,
// without holding a server thread meanwhile. The calls that write the store
// (Register, LeaseTrial, ReportTrial, ReleaseTrial and the probes) run on
// the service's own pool of threads, not gRPC's few: a write waits for its
// group commit's sync to disk (db/group_commit.h), and many waiting at once
// is what lets them share it; heartbeats, which write nothing
// (agent_liveness.h), are answered on gRPC's threads meanwhile.
//
//   AgentServiceImpl service(&planner->leases(), callers.get());
//   builder.RegisterService(&service);
#pragma once

#include <memory>

#include "service/background_pool.h"
#include "service/leases.h"
#include "proto/principals.h"
#include "tessera/v1/service.grpc.pb.h"

namespace tessera::service {

class AgentServiceImpl final : public v1::AgentService::CallbackService {
 public:
  // `leases` must outlive the service.
  // `callers` (null: callers are not told apart) says who each call is
  // (proto/principals.h); each call may act only as itself (access.h).
  // `store_pool` runs the calls that write the store.
  AgentServiceImpl(Leases* leases, const Callers* callers,
                   BackgroundPoolOptions store_pool = AgentStorePool())
      : leases_(leases),
        callers_(callers),
        store_pool_(std::make_unique<BackgroundPool>(store_pool)) {}

  // The default pool: enough threads that a second's writes of 2,000 agents
  // can wait for a commit together, at normal priority, and a queue that
  // holds a large fleet's start-up (past it: RESOURCE_EXHAUSTED, and the
  // agents back off).
  static BackgroundPoolOptions AgentStorePool() {
    return {.threads = 64, .max_queued = 20000, .nice_increment = 0};
  }

  grpc::ServerUnaryReactor* Register(grpc::CallbackServerContext* context,
                                     const v1::RegisterRequest* request,
                                     v1::RegisterResponse* response) override;
  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* context,
                                      const v1::HeartbeatRequest* request,
                                      v1::HeartbeatResponse* response) override;
  grpc::ServerUnaryReactor* ReportProbes(
      grpc::CallbackServerContext* context,
      const v1::ReportProbesRequest* request,
      v1::ReportProbesResponse* response) override;
  grpc::ServerUnaryReactor* LeaseTrial(
      grpc::CallbackServerContext* context,
      const v1::LeaseTrialRequest* request,
      v1::LeaseTrialResponse* response) override;
  grpc::ServerUnaryReactor* ReportTrial(
      grpc::CallbackServerContext* context,
      const v1::ReportTrialRequest* request,
      v1::ReportTrialResponse* response) override;
  grpc::ServerUnaryReactor* ReleaseTrial(
      grpc::CallbackServerContext* context,
      const v1::ReleaseTrialRequest* request,
      v1::ReleaseTrialResponse* response) override;
  grpc::ServerUnaryReactor* ReportCollectiveProbe(
      grpc::CallbackServerContext* context,
      const v1::ReportCollectiveProbeRequest* request,
      v1::ReportCollectiveProbeResponse* response) override;
  grpc::ServerUnaryReactor* Rendezvous(
      grpc::CallbackServerContext* context,
      const v1::RendezvousRequest* request,
      v1::RendezvousResponse* response) override;

 private:
  // OK when the call's principal may act as `agent_id` (access.h).
  absl::Status MayAct(const grpc::CallbackServerContext* context,
                      const std::string& agent_id) const;

  Leases* const leases_;
  const Callers* const callers_;
  std::unique_ptr<BackgroundPool> store_pool_;
};

}  // namespace tessera::service
