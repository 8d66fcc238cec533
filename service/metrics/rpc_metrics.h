// The latency of every unary RPC the planner serves (PlannerService,
// AgentService, grpc.health.v1.Health), by method and status code, as the
// histogram tessera_rpc_duration_seconds. A gRPC server interceptor times
// each call from its arrival to the status it sends, so no handler has to
// remember to (Rendezvous, which finishes later on another thread, too).
// Streaming calls (WatchStudy, Health/Watch) are not timed: their length is
// the client's choice.
//
//   RpcMetrics rpc_metrics;
//   grpc::ServerBuilder builder;
//   builder.experimental().SetInterceptorCreators(
//       rpc_metrics.InterceptorFactories());
//   ... serve ...
//   MetricFamily latency = rpc_metrics.Collect();
#pragma once

#include <memory>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/support/server_interceptor.h"
#include "grpcpp/support/status.h"
#include "service/metrics/exposition.h"
#include "service/metrics/histogram.h"

namespace tessera::service::metrics {

class RpcMetrics {
 public:
  RpcMetrics();

  // Counts one call: `method` as gRPC names it ("/pkg.Service/Method"; the
  // leading '/' is dropped in the label), `code` its status.
  void Observe(absl::string_view method, grpc::StatusCode code,
               absl::Duration duration);

  // For ServerBuilder::experimental().SetInterceptorCreators: one factory
  // whose interceptors call Observe. This object must outlive the server.
  std::vector<
      std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
  InterceptorFactories();

  // tessera_rpc_duration_seconds{method, code}: _bucket, _sum, _count.
  MetricFamily Collect() const { return latency_.Collect(); }

 private:
  Histogram latency_;
};

// "OK", "NOT_FOUND", ...: the code's canonical name.
std::string StatusCodeName(grpc::StatusCode code);

}  // namespace tessera::service::metrics
