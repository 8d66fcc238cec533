#include "service/metrics/metrics_endpoint.h"

#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "service/metrics/exposition.h"
#include "service/metrics/listen_address.h"

namespace tessera::service::metrics {
namespace {

MHD_Result HandleRequest(void* cls, MHD_Connection* connection, const char* url,
                         const char* method, const char* /*version*/,
                         const char* /*upload_data*/,
                         size_t* /*upload_data_size*/, void** /*con_cls*/) {
  const auto* endpoint = static_cast<const MetricsEndpoint*>(cls);
  const MetricsEndpoint::Reply reply = endpoint->Answer(method, url);
  MHD_Response* response = MHD_create_response_from_buffer(
      reply.body.size(), const_cast<char*>(reply.body.data()),
      MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE,
                          reply.http_status == MHD_HTTP_OK
                              ? std::string(kExpositionContentType).c_str()
                              : "text/plain; charset=utf-8");
  if (reply.http_status == MHD_HTTP_METHOD_NOT_ALLOWED) {
    MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  }
  const MHD_Result queued =
      MHD_queue_response(connection, reply.http_status, response);
  MHD_destroy_response(response);
  return queued;
}

}  // namespace

MetricsEndpoint::Reply MetricsEndpoint::Answer(absl::string_view method,
                                               absl::string_view path) const {
  if (path != "/metrics") {
    return {MHD_HTTP_NOT_FOUND,
            absl::StrCat("not found: ", path, " (metrics are at /metrics)\n")};
  }
  if (method != "GET" && method != "HEAD") {
    return {MHD_HTTP_METHOD_NOT_ALLOWED,
            absl::StrCat("method ", method, " not allowed: use GET\n")};
  }
  absl::StatusOr<std::string> text = render_();
  if (!text.ok()) {
    return {MHD_HTTP_INTERNAL_SERVER_ERROR,
            absl::StrCat("cannot collect metrics: ", text.status().ToString(),
                         "\n")};
  }
  return {MHD_HTTP_OK, *std::move(text)};
}

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    absl::string_view listen, Render render) {
  absl::StatusOr<ListenAddress> address =
      ResolveListenAddress(listen, "--metrics-listen", "127.0.0.1:9464");
  if (!address.ok()) return address.status();
  std::unique_ptr<MetricsEndpoint> endpoint(
      new MetricsEndpoint(std::move(render)));
  unsigned int flags = MHD_USE_AUTO_INTERNAL_THREAD;
  if (address->ipv6()) flags |= MHD_USE_IPv6;
  endpoint->daemon_ =
      MHD_start_daemon(flags, 0, /*apc=*/nullptr, /*apc_cls=*/nullptr,
                       &HandleRequest, endpoint.get(), MHD_OPTION_SOCK_ADDR,
                       address->sockaddr(), MHD_OPTION_CONNECTION_TIMEOUT, 10u,
                       MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_END);
  if (endpoint->daemon_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("--metrics-listen: cannot listen on ", listen));
  }
  const MHD_DaemonInfo* info =
      MHD_get_daemon_info(endpoint->daemon_, MHD_DAEMON_INFO_BIND_PORT);
  const uint16_t bound_port = info != nullptr ? info->port : 0;
  if (bound_port == 0) {
    return absl::UnavailableError(absl::StrCat(
        "--metrics-listen: bound ", listen, " but cannot tell its port"));
  }
  endpoint->address_ = address->WithPort(static_cast<int>(bound_port));
  return endpoint;
}

MetricsEndpoint::~MetricsEndpoint() {
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

}  // namespace tessera::service::metrics
