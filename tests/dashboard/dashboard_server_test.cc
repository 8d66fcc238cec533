// dashboard/dashboard_server.h over a real planner's store: the routes, that
// it only reads (405 for anything but GET, the store unchanged), the
// planner's own access rules (401 without a token, 403 for an agent's),
// that a held wait returns when a trial lands and not before, and one real
// HTTP exchange on its socket.
#include "dashboard/dashboard_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "service/server.h"
#include "proto/principals.h"
#include "tests/cli/browser_test_util.h"
#include "tests/cli/cli_test_util.h"

namespace tessera::dashboard {
namespace {

using cli::CliRun;
using cli::RunCli;
using nlohmann::json;

constexpr char kUserToken[] = "user-token-0123456789abcdef0123456789";
constexpr char kAgentToken[] = "agent-token-0123456789abcdef012345678";

// A planner with its store in a scratch folder, one study submitted.
class DashboardServerTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("tessera_dashboard_", getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    options_.db_path = (dir_ / "planner.db").string();
    options_.log = service::Log(service::LogLevel::kOff);
    absl::StatusOr<std::unique_ptr<service::PlannerServer>> server =
        service::PlannerServer::Start("127.0.0.1:0", options_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  int64_t Submit(int max_trials) {
    const std::filesystem::path spec = dir_ / "study.json";
    std::ofstream(spec) << absl::StrCat(R"({"name": "dash <one>",
      "model": {"preset": "tiny"},
      "cluster": {"gpu": {"preset": "h100-sxm"}, "nodes": 1,
                  "gpus_per_node": 8},
      "training": {"global_batch": 16, "seq_len": 128},
      "search": {"top": 5},
      "trials": {"max_trials": )",
                                        max_trials,
                                        R"(, "warmup_steps": 2, "steps": 6}})");
    const CliRun r =
        RunCli({"submit", spec.string(), "--planner", server_->address()});
    EXPECT_EQ(r.status, 0) << r.err;
    int64_t id = 0;
    EXPECT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(r.out), &id));
    return id;
  }

  std::unique_ptr<DashboardServer> Dashboard(
      std::shared_ptr<const Callers> callers = nullptr,
      absl::Duration hold = absl::Seconds(5)) {
    DashboardOptions o{.listen = "127.0.0.1:0",
                       .db_path = options_.db_path,
                       .callers = std::move(callers),
                       .poll_hold = hold,
                       .poll_check = absl::Milliseconds(20)};
    absl::StatusOr<std::unique_ptr<DashboardServer>> d =
        DashboardServer::Start(std::move(o));
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? *std::move(d) : nullptr;
  }

  std::filesystem::path dir_;
  service::PlannerOptions options_;
  std::unique_ptr<service::PlannerServer> server_;
};

using Query = std::map<std::string, std::string>;

TEST_F(DashboardServerTest, ServesThePageAndItsViewsAndNothingThatWrites) {
  const int64_t id = Submit(2);
  std::unique_ptr<DashboardServer> d = Dashboard();
  ASSERT_NE(d, nullptr);
  DashboardServer::Reply page = d->Answer("GET", "/", {}, "");
  EXPECT_EQ(page.http_status, 200);
  EXPECT_NE(page.body.find("<script src=\"/dashboard.js\"></script>"),
            std::string::npos);
  EXPECT_EQ(d->pages_served(), 1);
  EXPECT_EQ(d->Answer("GET", "/dashboard.js", {}, "").http_status, 200);
  // The list and the study: JSON with the view's HTML, the study's name
  // escaped.
  DashboardServer::Reply list = d->Answer("GET", "/api/studies", {}, "");
  ASSERT_EQ(list.http_status, 200) << list.body;
  const json l = json::parse(list.body);
  EXPECT_NE(l["html"].get<std::string>().find(
                absl::StrCat("<a href=\"#study=", id, "\">")),
            std::string::npos);
  EXPECT_NE(l["html"].get<std::string>().find("dash &lt;one&gt;"),
            std::string::npos);
  DashboardServer::Reply study =
      d->Answer("GET", absl::StrCat("/api/studies/", id), {}, "");
  ASSERT_EQ(study.http_status, 200) << study.body;
  const json s = json::parse(study.body);
  for (const char* section :
       {"Pareto front", "Measured against predicted", "Layouts against "
        "throughput", "Loss per step", "Step time per step", "Calibration",
        "<h2>Spec</h2>"}) {
    EXPECT_NE(s["html"].get<std::string>().find(section), std::string::npos)
        << section;
  }
  // Its version is what a wait compares: the same as Version() reads.
  db::SqliteTrialStoreOptions read_only;
  read_only.read_only = true;
  absl::StatusOr<std::unique_ptr<db::SqliteTrialStore>> store =
      db::SqliteTrialStore::Open(options_.db_path, read_only);
  ASSERT_TRUE(store.ok()) << store.status();
  // (The planner may still be queueing the study's trials: compare once it
  // has settled.)
  std::string viewed, read;
  for (int i = 0; i < 100; ++i) {
    viewed = json::parse(
        d->Answer("GET", absl::StrCat("/api/studies/", id), {}, "").body)
        ["version"];
    read = *DashboardViews(store->get()).Version(id);
    if (viewed == read) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(viewed, read);
  // Unknown things.
  EXPECT_EQ(d->Answer("GET", "/api/studies/999", {}, "").http_status, 404);
  EXPECT_EQ(d->Answer("GET", "/nope", {}, "").http_status, 404);
  EXPECT_EQ(
      d->Answer("GET", "/api/wait", {{"study", "x"}}, "").http_status, 400);
  // Nothing writes: every other method is refused, and the store is as it
  // was.
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH"}) {
    const DashboardServer::Reply r =
        d->Answer(method, absl::StrCat("/api/studies/", id), {}, "");
    EXPECT_EQ(r.http_status, 405) << method;
    ASSERT_FALSE(r.headers.empty());
    EXPECT_EQ(r.headers[0].second, "GET, HEAD");
  }
}

TEST_F(DashboardServerTest, LetsInWhomThePlannerLetsIn) {
  absl::StatusOr<PrincipalTable> table = ParsePrincipals(
      absl::StrCat("user alice ", kUserToken, "\nagent node-1 ", kAgentToken,
                   "\n"),
      "--principals-file");
  ASSERT_TRUE(table.ok()) << table.status();
  std::unique_ptr<DashboardServer> d =
      Dashboard(std::make_shared<const Callers>(*std::move(table), false));
  ASSERT_NE(d, nullptr);
  // The page holds no data: served to anyone, who then gives a token.
  EXPECT_EQ(d->Answer("GET", "/", {}, "").http_status, 200);
  for (const char* path : {"/api/studies", "/api/wait"}) {
    const DashboardServer::Reply none = d->Answer("GET", path, {}, "");
    EXPECT_EQ(none.http_status, 401) << path;
    ASSERT_FALSE(none.headers.empty());
    EXPECT_EQ(none.headers[0].first, "WWW-Authenticate");
    EXPECT_EQ(d->Answer("GET", path, {}, "Bearer not-a-known-token-at-all-xx")
                  .http_status,
              401);
    const DashboardServer::Reply agent =
        d->Answer("GET", path, {}, absl::StrCat("Bearer ", kAgentToken));
    EXPECT_EQ(agent.http_status, 403) << path;
    EXPECT_NE(agent.body.find("agent node-1 may not read"), std::string::npos);
  }
  EXPECT_EQ(d->Answer("GET", "/api/studies", {},
                      absl::StrCat("Bearer ", kUserToken))
                .http_status,
            200);
  // The token, not a look-alike.
  EXPECT_EQ(d->Answer("GET", "/api/studies", {}, kUserToken).http_status, 401);
}

TEST_F(DashboardServerTest, AWaitReturnsWhenTheViewChangesAndNotBefore) {
  std::unique_ptr<DashboardServer> d =
      Dashboard(nullptr, absl::Milliseconds(300));
  ASSERT_NE(d, nullptr);
  const std::string version =
      json::parse(d->Answer("GET", "/api/studies", {}, "").body)["version"];
  // Nothing changes: held for the hold, then "unchanged".
  const auto start = std::chrono::steady_clock::now();
  json w = json::parse(
      d->Answer("GET", "/api/wait", {{"study", "0"}, {"version", version}}, "")
          .body);
  EXPECT_GE(std::chrono::steady_clock::now() - start,
            std::chrono::milliseconds(280));
  EXPECT_EQ(w["changed"], false);
  EXPECT_EQ(w["version"], version);
  // A study lands while a wait is held (a long hold this time): it returns
  // with the new version, long before the hold ends.
  std::unique_ptr<DashboardServer> patient =
      Dashboard(nullptr, absl::Seconds(30));
  std::future<std::string> held = std::async(std::launch::async, [&] {
    return patient
        ->Answer("GET", "/api/wait", {{"study", "0"}, {"version", version}},
                 "")
        .body;
  });
  for (int i = 0; i < 200 && patient->waits_held() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(patient->waits_held(), 1);
  const auto submitted = std::chrono::steady_clock::now();
  Submit(2);
  w = json::parse(held.get());
  EXPECT_LT(std::chrono::steady_clock::now() - submitted,
            std::chrono::seconds(5));
  EXPECT_EQ(w["changed"], true);
  EXPECT_NE(w["version"], version);
  // The version returned is the view's: the same as the list's now, or, when
  // the planner moved the study on since (its advancer writes the queue
  // reason a moment later), one that a wait sees superseded at once.
  const std::string now =
      json::parse(d->Answer("GET", "/api/studies", {}, "").body)["version"];
  if (w["version"] != now) {
    const auto asked = std::chrono::steady_clock::now();
    const json again = json::parse(
        d->Answer("GET", "/api/wait",
                  {{"study", "0"}, {"version", w["version"].get<std::string>()}},
                  "")
            .body);
    EXPECT_EQ(again["changed"], true);
    EXPECT_LT(std::chrono::steady_clock::now() - asked,
              std::chrono::milliseconds(250));
  }
}

// One request over the socket, as a browser sends it: the status line and
// the body.
std::string HttpGet(const std::string& address, const std::string& path) {
  const size_t colon = address.rfind(':');
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
  inet_pton(AF_INET, address.substr(0, colon).c_str(), &to.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    close(fd);
    return "";
  }
  const std::string request =
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: ", address, "\r\n\r\n");
  (void)!write(fd, request.data(), request.size());
  std::string response;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) {
    response.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return response;
}

TEST_F(DashboardServerTest, AnswersOverItsSocket) {
  Submit(2);
  std::unique_ptr<DashboardServer> d = Dashboard();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->url(), absl::StrCat("http://", d->address(), "/"));
  const std::string page = HttpGet(d->address(), "/");
  EXPECT_EQ(page.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << page.substr(0, 200);
  EXPECT_NE(page.find("Content-Security-Policy: default-src 'none'"),
            std::string::npos);
  const std::string list = HttpGet(d->address(), "/api/studies");
  EXPECT_EQ(list.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << list.substr(0, 200);
  EXPECT_NE(list.find("dash &lt;one&gt;"), std::string::npos);
  // Bad addresses are named.
  EXPECT_EQ(DashboardServer::Start({.listen = "nonsense",
                                    .db_path = options_.db_path})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DashboardServer::Start({.listen = "127.0.0.1:0",
                                    .db_path = (dir_ / "none.db").string()})
                .status()
                .ok(),
            false);
}

}  // namespace
}  // namespace tessera::dashboard
