// tessera-planner's live dashboard over HTTP (`--http HOST:PORT`), served by
// libmicrohttpd on its own threads beside the gRPC port:
//
//   GET /               the page (dashboard_page.h): no data in it
//   GET /dashboard.js   its script
//   GET /api/studies    the study list   {"version", "title", "html"}
//   GET /api/studies/ID one study's view (dashboard_views.h), the same form
//   GET /api/wait?study=ID&version=V   held until the view's version is no
//                       longer V, or for poll_hold: {"version", "changed"}
//                       (study 0: the list)
//
// Read-only: it opens the planner's SQLite store read-only, answers only
// GET and HEAD (405 otherwise) and has no call that changes anything. The
// /api calls need what the planner's gRPC port needs (dashboard_access.h):
// 401 with "WWW-Authenticate: Bearer" without a token the planner knows,
// 403 for an agent's. With the planner's TLS certificate and key it serves
// HTTPS, so that a token never crosses the network in the clear.
//
//   DashboardOptions o{.listen = "127.0.0.1:0", .db_path = "tessera.db"};
//   TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<DashboardServer> d,
//                            DashboardServer::Start(o));
//   std::cout << "dashboard on " << d->url() << std::endl;
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "dashboard/dashboard_access.h"
#include "dashboard/dashboard_views.h"
#include "db/sqlite_trial_store.h"
#include "proto/principals.h"

struct MHD_Daemon;

namespace tessera::dashboard {

struct DashboardOptions {
  std::string listen = {};   // HOST:PORT ([IPv6]:PORT); port 0: a free one
  std::string db_path = {};  // the planner's store (--db), opened read-only
  // Who may read (the planner's callers); null: open.
  std::shared_ptr<const Callers> callers = {};
  // PEM text of the planner's certificate chain and key: HTTPS when both
  // are given.
  std::string tls_cert_pem = {};
  std::string tls_key_pem = {};
  // How long /api/wait holds an unchanged view, and how often it looks.
  absl::Duration poll_hold = absl::Seconds(15);
  absl::Duration poll_check = absl::Milliseconds(250);
};

class DashboardServer {
 public:
  // INVALID_ARGUMENT naming --http for a malformed address or a host that
  // does not resolve, or for TLS text given half; UNAVAILABLE when the
  // address cannot be bound; the store's error when it cannot be opened.
  static absl::StatusOr<std::unique_ptr<DashboardServer>> Start(
      DashboardOptions options);
  // Stops serving: held waits end at once.
  ~DashboardServer();

  DashboardServer(const DashboardServer&) = delete;
  DashboardServer& operator=(const DashboardServer&) = delete;

  // host:port as bound ("127.0.0.1:43127"), the host as given.
  const std::string& address() const { return address_; }
  // "http://HOST:PORT/" or "https://HOST:PORT/".
  std::string url() const;

  // What a request gets: status, content type, body, extra headers.
  struct Reply {
    int http_status = 200;
    std::string content_type = {};
    std::string body = {};
    std::vector<std::pair<std::string, std::string>> headers = {};
  };
  // The answer to `method` `path` with its query arguments and
  // Authorization header (may hold for /api/wait).
  Reply Answer(absl::string_view method, absl::string_view path,
               const std::map<std::string, std::string>& query,
               absl::string_view authorization) const;

  // Pages (GET /) served, and /api/wait calls holding now: what a test
  // watches to know the page loaded once and is waiting.
  int64_t pages_served() const { return pages_served_.load(); }
  int64_t waits_held() const { return waits_held_.load(); }

 private:
  explicit DashboardServer(DashboardOptions options);

  Reply Api(absl::string_view path,
            const std::map<std::string, std::string>& query) const;
  Reply Wait(const std::map<std::string, std::string>& query) const;

  DashboardOptions options_;
  DashboardAccess access_;
  std::unique_ptr<db::SqliteTrialStore> store_;
  std::unique_ptr<DashboardViews> views_;
  MHD_Daemon* daemon_ = nullptr;
  std::string address_;
  mutable std::atomic<int64_t> pages_served_{0};
  mutable std::atomic<int64_t> waits_held_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace tessera::dashboard
