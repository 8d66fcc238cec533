#include "service/metrics/rpc_metrics.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/strip.h"
#include "grpcpp/support/interceptor.h"

namespace tessera::service::metrics {
namespace {

// Bounds in seconds: from a store read (a fraction of a millisecond) to a
// rendezvous fetch that waits up to a minute.
std::vector<double> LatencyBounds() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
          0.25,   0.5,   1,      2.5,   5,    10,    30,   60};
}

// Lives as long as its call (gRPC deletes it); times it from creation, at
// the call's arrival, to the status it sends.
class LatencyInterceptor : public grpc::experimental::Interceptor {
 public:
  LatencyInterceptor(RpcMetrics* metrics, std::string method)
      : metrics_(metrics), method_(std::move(method)), start_(absl::Now()) {}

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      metrics_->Observe(method_, methods->GetSendStatus().error_code(),
                        absl::Now() - start_);
    }
    methods->Proceed();
  }

 private:
  RpcMetrics* const metrics_;
  const std::string method_;
  const absl::Time start_;
};

class LatencyInterceptorFactory
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit LatencyInterceptorFactory(RpcMetrics* metrics) : metrics_(metrics) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    if (info->type() != grpc::experimental::ServerRpcInfo::Type::UNARY) {
      return nullptr;
    }
    return new LatencyInterceptor(metrics_, info->method());
  }

 private:
  RpcMetrics* const metrics_;
};

}  // namespace

std::string StatusCodeName(grpc::StatusCode code) {
  // gRPC's codes are the canonical codes, number for number.
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

RpcMetrics::RpcMetrics()
    : latency_("tessera_rpc_duration_seconds",
               "Time from a unary RPC's arrival to its status, by method and "
               "status code.",
               {"method", "code"}, LatencyBounds()) {}

void RpcMetrics::Observe(absl::string_view method, grpc::StatusCode code,
                         absl::Duration duration) {
  latency_.Observe(
      {std::string(absl::StripPrefix(method, "/")), StatusCodeName(code)},
      absl::ToDoubleSeconds(duration));
}

std::vector<
    std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
RpcMetrics::InterceptorFactories() {
  std::vector<
      std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
      factories;
  factories.push_back(std::make_unique<LatencyInterceptorFactory>(this));
  return factories;
}

}  // namespace tessera::service::metrics
