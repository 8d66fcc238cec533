// The HTTP endpoint Prometheus scrapes: GET /metrics answers what `render`
// returns, as the text exposition format (exposition.h). Any other path is
// 404, any method but GET and HEAD 405, and an error from `render` 500 with
// its message. Served by libmicrohttpd on its own thread.
//
//   TESSERA_ASSIGN_OR_RETURN(
//       std::unique_ptr<MetricsEndpoint> endpoint,
//       MetricsEndpoint::Start("127.0.0.1:0", [&] { return Render(); }));
//   std::cout << "metrics on " << endpoint->address() << std::endl;
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

struct MHD_Daemon;

namespace tessera::service::metrics {

class MetricsEndpoint {
 public:
  using Render = std::function<absl::StatusOr<std::string>()>;

  // Serves on `listen` (HOST:PORT, [IPv6]:PORT; port 0 picks a free one).
  // InvalidArgument names --metrics-listen when `listen` is malformed or the
  // host does not resolve; Unavailable when the address cannot be bound.
  // `render` runs on the endpoint's thread, one scrape at a time.
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      absl::string_view listen, Render render);
  // Stops serving (waits for a scrape in progress).
  ~MetricsEndpoint();

  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // host:port as bound ("127.0.0.1:43127"), the host as given.
  const std::string& address() const { return address_; }

  // What a request for `method` `path` gets: the status code, and the body
  // (the exposition text on 200, a short message otherwise).
  struct Reply {
    int http_status = 200;
    std::string body;
  };
  Reply Answer(absl::string_view method, absl::string_view path) const;

 private:
  explicit MetricsEndpoint(Render render) : render_(std::move(render)) {}

  Render render_;
  MHD_Daemon* daemon_ = nullptr;
  std::string address_;
};

}  // namespace tessera::service::metrics
