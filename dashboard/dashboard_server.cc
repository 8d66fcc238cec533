#include "dashboard/dashboard_server.h"

#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstring>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "dashboard/dashboard_page.h"
#include "nlohmann/json.hpp"
#include "service/metrics/listen_address.h"

namespace tessera::dashboard {
namespace {

constexpr char kJson[] = "application/json; charset=utf-8";
constexpr char kText[] = "text/plain; charset=utf-8";

// The page may run its own script and talk to this server only; the views'
// SVG carries inline style attributes.
constexpr char kContentSecurityPolicy[] =
    "default-src 'none'; script-src 'self'; connect-src 'self'; "
    "style-src 'unsafe-inline'; img-src 'self' data:; form-action 'none'; "
    "frame-ancestors 'none'; base-uri 'none'";

MHD_Result CollectArgument(void* cls, MHD_ValueKind /*kind*/, const char* key,
                           const char* value) {
  auto* query = static_cast<std::map<std::string, std::string>*>(cls);
  (*query)[key] = value == nullptr ? "" : value;
  return MHD_YES;
}

MHD_Result HandleRequest(void* cls, MHD_Connection* connection, const char* url,
                         const char* method, const char* /*version*/,
                         const char* /*upload_data*/, size_t* upload_data_size,
                         void** con_cls) {
  // Answered at the first call, from the headers: nothing here takes a body
  // (any method but GET and HEAD is refused); one that still arrives is
  // dropped.
  (void)con_cls;
  if (*upload_data_size != 0) {
    *upload_data_size = 0;
    return MHD_YES;
  }
  const auto* server = static_cast<const DashboardServer*>(cls);
  std::map<std::string, std::string> query;
  MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, &CollectArgument,
                            &query);
  const char* authorization = MHD_lookup_connection_value(
      connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
  const DashboardServer::Reply reply = server->Answer(
      method, url, query, authorization == nullptr ? "" : authorization);
  MHD_Response* response = MHD_create_response_from_buffer(
      reply.body.size(), const_cast<char*>(reply.body.data()),
      MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE,
                          reply.content_type.c_str());
  MHD_add_response_header(response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  MHD_add_response_header(response, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(response, "Content-Security-Policy",
                          kContentSecurityPolicy);
  for (const auto& [name, value] : reply.headers) {
    MHD_add_response_header(response, name.c_str(), value.c_str());
  }
  const MHD_Result queued =
      MHD_queue_response(connection, reply.http_status, response);
  MHD_destroy_response(response);
  return queued;
}

DashboardServer::Reply JsonReply(const nlohmann::json& j) {
  return {MHD_HTTP_OK, kJson,
          j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
}

DashboardServer::Reply ErrorReply(const absl::Status& s) {
  int code = MHD_HTTP_INTERNAL_SERVER_ERROR;
  switch (s.code()) {
    case absl::StatusCode::kNotFound:
      code = MHD_HTTP_NOT_FOUND;
      break;
    case absl::StatusCode::kInvalidArgument:
      code = MHD_HTTP_BAD_REQUEST;
      break;
    case absl::StatusCode::kUnauthenticated:
      code = MHD_HTTP_UNAUTHORIZED;
      break;
    case absl::StatusCode::kPermissionDenied:
      code = MHD_HTTP_FORBIDDEN;
      break;
    default:
      break;
  }
  DashboardServer::Reply r{code, kText, absl::StrCat(s.message(), "\n")};
  if (code == MHD_HTTP_UNAUTHORIZED) {
    r.headers.push_back(
        {MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"tessera-planner\""});
  }
  return r;
}

// The study id of "?study=ID" (0: the list); INVALID_ARGUMENT otherwise.
absl::StatusOr<int64_t> StudyArgument(
    const std::map<std::string, std::string>& query) {
  auto it = query.find("study");
  if (it == query.end() || it->second.empty()) return 0;
  int64_t id = 0;
  if (!absl::SimpleAtoi(it->second, &id) || id < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("study: '", it->second, "' is not a study id"));
  }
  return id;
}

}  // namespace

DashboardServer::DashboardServer(DashboardOptions options)
    : options_(std::move(options)), access_(options_.callers) {}

std::string DashboardServer::url() const {
  return absl::StrCat(options_.tls_cert_pem.empty() ? "http" : "https", "://",
                      address_, "/");
}

DashboardServer::Reply DashboardServer::Answer(
    absl::string_view method, absl::string_view path,
    const std::map<std::string, std::string>& query,
    absl::string_view authorization) const {
  if (method != "GET" && method != "HEAD") {
    Reply r{MHD_HTTP_METHOD_NOT_ALLOWED, kText,
            absl::StrCat("method ", method,
                         " not allowed: the dashboard only reads (GET)\n")};
    r.headers.push_back({MHD_HTTP_HEADER_ALLOW, "GET, HEAD"});
    return r;
  }
  if (path == "/" || path == "/index.html") {
    ++pages_served_;
    return {MHD_HTTP_OK, "text/html; charset=utf-8",
            std::string(DashboardPageHtml())};
  }
  if (path == "/dashboard.js") {
    return {MHD_HTTP_OK, "text/javascript; charset=utf-8",
            std::string(DashboardScript())};
  }
  if (!absl::StartsWith(path, "/api/")) {
    return {MHD_HTTP_NOT_FOUND, kText,
            absl::StrCat("not found: ", path, " (the dashboard is at /)\n")};
  }
  if (absl::Status s = access_.MayRead(authorization); !s.ok()) {
    return ErrorReply(s);
  }
  return Api(path, query);
}

DashboardServer::Reply DashboardServer::Api(
    absl::string_view path,
    const std::map<std::string, std::string>& query) const {
  if (path == "/api/wait") return Wait(query);
  if (path == "/api/studies") {
    absl::StatusOr<View> v = views_->Studies();
    if (!v.ok()) return ErrorReply(v.status());
    return JsonReply(
        {{"version", v->version}, {"title", v->title}, {"html", v->html}});
  }
  absl::string_view rest = path;
  int64_t id = 0;
  if (absl::ConsumePrefix(&rest, "/api/studies/") &&
      absl::SimpleAtoi(rest, &id) && id > 0) {
    absl::StatusOr<View> v = views_->Study(id, absl::Now());
    if (!v.ok()) return ErrorReply(v.status());
    return JsonReply(
        {{"version", v->version}, {"title", v->title}, {"html", v->html}});
  }
  return {MHD_HTTP_NOT_FOUND, kText, absl::StrCat("not found: ", path, "\n")};
}

DashboardServer::Reply DashboardServer::Wait(
    const std::map<std::string, std::string>& query) const {
  absl::StatusOr<int64_t> id = StudyArgument(query);
  if (!id.ok()) return ErrorReply(id.status());
  auto seen = query.find("version");
  const std::string known = seen == query.end() ? "" : seen->second;
  ++waits_held_;
  const absl::Time until = absl::Now() + options_.poll_hold;
  absl::StatusOr<std::string> version = views_->Version(*id);
  while (version.ok() && *version == known && absl::Now() < until &&
         !stopping_.load()) {
    absl::SleepFor(options_.poll_check);
    version = views_->Version(*id);
  }
  --waits_held_;
  if (!version.ok()) return ErrorReply(version.status());
  return JsonReply({{"version", *version}, {"changed", *version != known}});
}

absl::StatusOr<std::unique_ptr<DashboardServer>> DashboardServer::Start(
    DashboardOptions options) {
  const std::string listen = options.listen;
  if (options.tls_cert_pem.empty() != options.tls_key_pem.empty()) {
    return absl::InvalidArgumentError(
        "--http: HTTPS needs both the certificate and its key");
  }
  absl::StatusOr<service::metrics::ListenAddress> address =
      service::metrics::ResolveListenAddress(listen, "--http",
                                             "127.0.0.1:8080");
  if (!address.ok()) return address.status();
  std::unique_ptr<DashboardServer> server(
      new DashboardServer(std::move(options)));
  db::SqliteTrialStoreOptions store_options;
  store_options.read_only = true;
  absl::StatusOr<std::unique_ptr<db::SqliteTrialStore>> store =
      db::SqliteTrialStore::Open(server->options_.db_path, store_options);
  if (!store.ok()) {
    return absl::Status(store.status().code(),
                        absl::StrCat("--http: ", store.status().message()));
  }
  server->store_ = *std::move(store);
  server->views_ = std::make_unique<DashboardViews>(server->store_.get());
  // A thread per connection: a held /api/wait does not keep others waiting.
  unsigned int flags = MHD_USE_THREAD_PER_CONNECTION |
                       MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  if (address->ipv6()) flags |= MHD_USE_IPv6;
  const bool tls = !server->options_.tls_cert_pem.empty();
  if (tls) flags |= MHD_USE_TLS;
  if (tls) {
    server->daemon_ = MHD_start_daemon(
        flags, 0, nullptr, nullptr, &HandleRequest, server.get(),
        MHD_OPTION_SOCK_ADDR, address->sockaddr(), MHD_OPTION_CONNECTION_TIMEOUT,
        60u, MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_HTTPS_MEM_KEY,
        server->options_.tls_key_pem.c_str(), MHD_OPTION_HTTPS_MEM_CERT,
        server->options_.tls_cert_pem.c_str(), MHD_OPTION_END);
  } else {
    server->daemon_ = MHD_start_daemon(
        flags, 0, nullptr, nullptr, &HandleRequest, server.get(),
        MHD_OPTION_SOCK_ADDR, address->sockaddr(), MHD_OPTION_CONNECTION_TIMEOUT,
        60u, MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_END);
  }
  if (server->daemon_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("--http: cannot listen on ", listen));
  }
  const MHD_DaemonInfo* info =
      MHD_get_daemon_info(server->daemon_, MHD_DAEMON_INFO_BIND_PORT);
  const uint16_t bound_port = info != nullptr ? info->port : 0;
  if (bound_port == 0) {
    return absl::UnavailableError(
        absl::StrCat("--http: bound ", listen, " but cannot tell its port"));
  }
  server->address_ = address->WithPort(static_cast<int>(bound_port));
  return server;
}

DashboardServer::~DashboardServer() {
  stopping_ = true;
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

}  // namespace tessera::dashboard
