// The whole planner service in one object: the SQLite store, the Planner,
// PlannerService, AgentService and the gRPC health service (health.h) on one
// grpc::Server, with every unary call's latency timed (metrics/rpc_metrics.h)
// and, when options.metrics_listen is set, Prometheus metrics served over
// HTTP (metrics/metrics_endpoint.h). What tessera-planner runs, and what
// tests start on 127.0.0.1:0 with a temporary database.
//
//   PlannerOptions options;
//   options.db_path = "tessera.db";
//   TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<PlannerServer> server,
//       PlannerServer::Start("127.0.0.1:0", options));
//   std::cout << "listening on " << server->address() << std::endl;
//   server->Shutdown();
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "db/sqlite_trial_store.h"
#include "grpcpp/server.h"
#include "service/agent_service.h"
#include "service/metrics/metrics_endpoint.h"
#include "service/metrics/rpc_metrics.h"
#include "service/planner.h"
#include "service/planner_service.h"

namespace tessera::service {

// The largest request the planner reads (gRPC's default, stated: a study
// with an imported calibration fits many times over; a trial's report is
// capped lower, kMaxReportBytes) and the largest reply it sends (a Plan of
// the 1000 candidates it answers at most is about 1 MB).
inline constexpr size_t kMaxRequestBytes = size_t{4} << 20;
inline constexpr size_t kMaxReplyBytes = size_t{64} << 20;

class PlannerServer {
 public:
  // Opens (or creates) the store at options.db_path (with options.clock),
  // resumes its studies and serves on `listen` (host:port; port 0 picks a
  // free one), health SERVING. UNAVAILABLE names --listen (or
  // --metrics-listen) when the address cannot be bound; the store's errors
  // name the database.
  static absl::StatusOr<std::unique_ptr<PlannerServer>> Start(
      absl::string_view listen, PlannerOptions options,
      db::SqliteTrialStoreOptions store_options = {});
  // Shutdown(), then closes the store.
  ~PlannerServer();

  // Sets health NOT_SERVING, stops accepting calls, fails waiting
  // rendezvous fetches, cancels the calls still running after `grace` (watch
  // streams), waits for them and stops the metrics endpoint. Idempotent.
  void Shutdown(absl::Duration grace = absl::Seconds(1));
  // Blocks until Shutdown is called (from another thread).
  void Wait();

  // host:port as bound ("127.0.0.1:43127").
  const std::string& address() const { return address_; }
  // The metrics endpoint's host:port as bound; "" without metrics_listen.
  std::string metrics_address() const {
    return metrics_endpoint_ != nullptr ? metrics_endpoint_->address() : "";
  }
  Planner& planner() { return *planner_; }
  db::SqliteTrialStore& store() { return *store_; }

 private:
  PlannerServer() = default;

  std::unique_ptr<db::SqliteTrialStore> store_;
  // Before server_: it must outlive the server's interceptors.
  metrics::RpcMetrics rpc_metrics_;
  std::unique_ptr<Planner> planner_;
  std::shared_ptr<const Callers> callers_;  // the services' (null: none)
  std::unique_ptr<PlannerServiceImpl> planner_service_;
  std::unique_ptr<AgentServiceImpl> agent_service_;
  std::unique_ptr<grpc::Server> server_;
  // Reads the store: stopped by Shutdown, before the store closes.
  std::unique_ptr<metrics::MetricsEndpoint> metrics_endpoint_;
  std::string address_;
  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tessera::service
