#include "service/server.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "service/health.h"
#include "service/metrics/planner_metrics.h"

namespace tessera::service {

absl::StatusOr<std::unique_ptr<PlannerServer>> PlannerServer::Start(
    absl::string_view listen, PlannerOptions options,
    db::SqliteTrialStoreOptions store_options) {
  const size_t colon = listen.rfind(':');
  if (colon == absl::string_view::npos || colon == 0 ||
      colon + 1 == listen.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--listen: '", listen, "' is not HOST:PORT (e.g. 127.0.0.1:50051)"));
  }
  std::unique_ptr<PlannerServer> s(new PlannerServer());
  const std::shared_ptr<grpc::ServerCredentials> credentials =
      options.credentials != nullptr ? options.credentials
                                     : grpc::InsecureServerCredentials();
  if (!store_options.clock) store_options.clock = options.clock;
  absl::StatusOr<std::unique_ptr<db::SqliteTrialStore>> store =
      db::SqliteTrialStore::Open(options.db_path, store_options);
  if (!store.ok()) {
    return absl::Status(
        store.status().code(),
        absl::StrCat("--db ", options.db_path, ": ", store.status().message()));
  }
  s->store_ = *std::move(store);
  const std::string metrics_listen = options.metrics_listen;
  const BackgroundPoolOptions search_pool = options.search_pool;
  s->callers_ = options.callers;
  TESSERA_ASSIGN_OR_RETURN(
      s->planner_, Planner::Create(s->store_.get(), std::move(options)));
  s->planner_service_ = std::make_unique<PlannerServiceImpl>(
      &s->planner_->studies(), s->callers_.get(), search_pool);
  s->agent_service_ = std::make_unique<AgentServiceImpl>(&s->planner_->leases(),
                                                         s->callers_.get());
  EnableHealthService();
  grpc::ServerBuilder builder;
  builder.experimental().SetInterceptorCreators(
      s->rpc_metrics_.InterceptorFactories());
  int port = 0;
  builder.AddListeningPort(std::string(listen), credentials, &port);
  // Bounded both ways: a request past kMaxRequestBytes is refused before it
  // is parsed, a reply past kMaxReplyBytes fails its call instead of
  // reaching the client (RESOURCE_EXHAUSTED either way).
  builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxRequestBytes));
  builder.SetMaxSendMessageSize(static_cast<int>(kMaxReplyBytes));
  builder.RegisterService(s->planner_service_.get());
  builder.RegisterService(s->agent_service_.get());
  s->server_ = builder.BuildAndStart();
  if (s->server_ == nullptr || port == 0) {
    return absl::UnavailableError(
        absl::StrCat("--listen: cannot listen on ", listen));
  }
  s->address_ = absl::StrCat(listen.substr(0, colon), ":", port);
  if (!metrics_listen.empty()) {
    PlannerServer* raw = s.get();
    TESSERA_ASSIGN_OR_RETURN(
        s->metrics_endpoint_,
        metrics::MetricsEndpoint::Start(metrics_listen, [raw] {
          return metrics::PlannerMetricsText(*raw->store_, raw->store_->path(),
                                             raw->rpc_metrics_);
        }));
  }
  SetServing(*s->server_, true);
  return s;
}

PlannerServer::~PlannerServer() { Shutdown(); }

void PlannerServer::Shutdown(absl::Duration grace) {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  if (server_ == nullptr) return;
  SetServing(*server_, false);
  planner_->leases().StopWaits();
  server_->Shutdown(std::chrono::system_clock::now() +
                    absl::ToChronoMilliseconds(grace));
  server_->Wait();
  metrics_endpoint_.reset();
}

void PlannerServer::Wait() {
  if (server_ != nullptr) server_->Wait();
}

}  // namespace tessera::service
