// The planner's health service (grpc.health.v1.Health on its gRPC port) and
// its Prometheus endpoint (GET /metrics), against a real PlannerServer.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "db/trial_store.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/client_context.h"
#include "gtest/gtest.h"
#include "service/metrics/exposition.h"
#include "tests/service/planner/test_harness.h"

namespace tessera::service::testing {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

// One HTTP/1.0 request to 127.0.0.1:port; returns the status line's code and
// the body.
std::pair<int, std::string> HttpGet(const std::string& address,
                                    const std::string& method,
                                    const std::string& path) {
  const int port = std::stoi(address.substr(address.rfind(':') + 1));
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const std::string request =
      method + " " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  EXPECT_EQ(write(fd, request.data(), request.size()),
            static_cast<ssize_t>(request.size()));
  std::string response;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) {
    response.append(buffer, n);
  }
  close(fd);
  const size_t space = response.find(' ');
  const size_t body = response.find("\r\n\r\n");
  if (space == std::string::npos || body == std::string::npos) return {0, ""};
  return {std::stoi(response.substr(space + 1, 3)), response.substr(body + 4)};
}

HealthCheckResponse::ServingStatus Check(Health::Stub& stub,
                                         const std::string& service,
                                         grpc::StatusCode* code) {
  grpc::ClientContext context;
  HealthCheckRequest request;
  request.set_service(service);
  HealthCheckResponse response;
  *code = stub.Check(&context, request, &response).error_code();
  return response.status();
}

TEST(HealthTest, ServingForEachServiceNotFoundOtherwiseNotServingAtShutdown) {
  TempDir dir;
  ManualClock clock;
  TestServer s = StartServer(TestOptions(dir.File("t.db"), clock));
  ASSERT_NE(s.server, nullptr);
  std::unique_ptr<Health::Stub> health = Health::NewStub(s.channel);
  for (const std::string& name :
       {std::string(""), std::string("tessera.v1.PlannerService"),
        std::string("tessera.v1.AgentService")}) {
    grpc::StatusCode code;
    EXPECT_EQ(Check(*health, name, &code), HealthCheckResponse::SERVING)
        << "'" << name << "'";
    EXPECT_EQ(code, grpc::StatusCode::OK) << "'" << name << "'";
  }
  grpc::StatusCode code;
  Check(*health, "tessera.v1.NoSuchService", &code);
  EXPECT_EQ(code, grpc::StatusCode::NOT_FOUND);

  // Watch: SERVING now, NOT_SERVING once the server shuts down.
  grpc::ClientContext context;
  HealthCheckRequest request;
  request.set_service("tessera.v1.PlannerService");
  std::unique_ptr<grpc::ClientReader<HealthCheckResponse>> watch =
      health->Watch(&context, request);
  HealthCheckResponse update;
  ASSERT_TRUE(watch->Read(&update));
  EXPECT_EQ(update.status(), HealthCheckResponse::SERVING);
  std::thread stopper([&] { s.server->Shutdown(absl::Seconds(2)); });
  ASSERT_TRUE(watch->Read(&update));
  EXPECT_EQ(update.status(), HealthCheckResponse::NOT_SERVING);
  context.TryCancel();
  stopper.join();
}

// Parsed exposition text: sample line "name{labels}" -> value; checks the
// format's structure on the way (HELP and TYPE before each family's
// samples).
std::map<std::string, double> ParseExposition(const std::string& text) {
  std::map<std::string, double> samples;
  std::string family;
  bool help = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty()) continue;
    if (absl::ConsumePrefix(&line, "# HELP ")) {
      family = std::string(line.substr(0, line.find(' ')));
      EXPECT_TRUE(metrics::IsValidMetricName(family)) << family;
      help = true;
      continue;
    }
    if (absl::ConsumePrefix(&line, "# TYPE ")) {
      EXPECT_TRUE(help) << "TYPE without HELP: " << line;
      EXPECT_EQ(line.substr(0, line.find(' ')), family);
      help = false;
      continue;
    }
    const size_t space = line.rfind(' ');
    EXPECT_NE(space, absl::string_view::npos) << line;
    const std::string key(line.substr(0, space));
    EXPECT_EQ(key.rfind(family, 0), 0u) << key << " outside " << family;
    double value = 0;
    const absl::string_view text_value = line.substr(space + 1);
    if (text_value == "+Inf") {
      value = INFINITY;
    } else {
      EXPECT_TRUE(absl::SimpleAtod(text_value, &value)) << line;
    }
    EXPECT_TRUE(samples.emplace(key, value).second) << "repeated " << key;
  }
  return samples;
}

TEST(MetricsTest, CountsMatchTheStoreAndTheCallsMade) {
  TempDir dir;
  ManualClock clock;
  PlannerOptions options = TestOptions(dir.File("t.db"), clock);
  options.metrics_listen = "127.0.0.1:0";
  TestServer s = StartServer(options);
  ASSERT_NE(s.server, nullptr);
  ASSERT_FALSE(s.server->metrics_address().empty());

  v1::SubmitStudyRequest submit;
  *submit.mutable_spec() = TinySpec(1, 2);
  v1::SubmitStudyResponse submitted;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(s.planner->SubmitStudy(&context, submit, &submitted).ok());
  }
  const int kListCalls = 3;
  for (int i = 0; i < kListCalls; ++i) {
    grpc::ClientContext context;
    v1::ListStudiesResponse listed;
    ASSERT_TRUE(
        s.planner->ListStudies(&context, v1::ListStudiesRequest(), &listed)
            .ok());
  }
  {
    grpc::ClientContext context;
    v1::GetStudyRequest get;
    get.set_study_id(987654);
    v1::GetStudyResponse study;
    EXPECT_EQ(s.planner->GetStudy(&context, get, &study).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  ScriptedAgent agent(s, "agent-a");
  ASSERT_TRUE(agent.Register().ok());
  s.core().studies().WaitForAdvances();

  const auto [code, body] =
      HttpGet(s.server->metrics_address(), "GET", "/metrics");
  ASSERT_EQ(code, 200) << body;
  const std::map<std::string, double> m = ParseExposition(body);

  const std::string list =
      "method=\"tessera.v1.PlannerService/ListStudies\",code=\"OK\"";
  EXPECT_EQ(m.at("tessera_rpc_duration_seconds_count{" + list + "}"),
            kListCalls);
  EXPECT_EQ(m.at("tessera_rpc_duration_seconds_count{method=\"tessera.v1."
                 "PlannerService/GetStudy\",code=\"NOT_FOUND\"}"),
            1);
  EXPECT_EQ(m.at("tessera_rpc_duration_seconds_count{method=\"tessera.v1."
                 "AgentService/Register\",code=\"OK\"}"),
            1);
  // Buckets: cumulative, le increasing, +Inf equal to _count, in the
  // text's own order.
  std::vector<std::pair<double, double>> buckets;
  for (absl::string_view line : absl::StrSplit(body, '\n')) {
    if (!absl::ConsumePrefix(&line,
                             "tessera_rpc_duration_seconds_bucket{" + list)) {
      continue;
    }
    const size_t start = line.find("le=\"") + 4;
    const absl::string_view bound =
        line.substr(start, line.find('"', start) - start);
    double le = INFINITY, count = 0;
    if (bound != "+Inf") {
      ASSERT_TRUE(absl::SimpleAtod(bound, &le)) << line;
    }
    ASSERT_TRUE(absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &count));
    buckets.emplace_back(le, count);
  }
  ASSERT_GE(buckets.size(), 2u);
  for (size_t i = 1; i < buckets.size(); ++i) {
    EXPECT_LT(buckets[i - 1].first, buckets[i].first);
    EXPECT_LE(buckets[i - 1].second, buckets[i].second);
  }
  EXPECT_EQ(buckets.back().first, INFINITY);
  EXPECT_EQ(buckets.back().second, kListCalls);
  EXPECT_GT(m.at("tessera_rpc_duration_seconds_sum{" + list + "}"), 0);

  // The store's own counts.
  absl::StatusOr<std::map<db::TrialState, int64_t>> counts =
      s.server->store().CountTrialsByStatus(submitted.study_id());
  ASSERT_TRUE(counts.ok()) << counts.status();
  int64_t total = 0;
  for (const auto& [state, count] : *counts) {
    EXPECT_EQ(m.at("tessera_trials{state=\"" +
                   std::string(db::TrialStateName(state)) + "\"}"),
              count)
        << db::TrialStateName(state);
    total += count;
  }
  EXPECT_GT(total, 0);
  absl::StatusOr<db::Study> study =
      s.server->store().GetStudy(submitted.study_id());
  ASSERT_TRUE(study.ok());
  EXPECT_EQ(m.at("tessera_studies{status=\"" +
                 std::string(db::StudyStatusName(study->status)) + "\"}"),
            1);
  EXPECT_EQ(m.at("tessera_agents{state=\"active\"}"), 1);
  EXPECT_EQ(m.at("tessera_agents{state=\"gone\"}"), 0);
  EXPECT_GT(m.at("tessera_store_size_bytes"), 0);

  EXPECT_EQ(HttpGet(s.server->metrics_address(), "GET", "/nope").first, 404);
  EXPECT_EQ(HttpGet(s.server->metrics_address(), "POST", "/metrics").first,
            405);
}

TEST(MetricsTest, LabelValuesAndHelpAreEscaped) {
  metrics::MetricFamily family{
      "x_total", "a \\ b\nc", metrics::MetricType::kCounter, {}};
  family.samples.push_back({"", {{"path", "a\"b\\c\nd"}}, 1.5});
  EXPECT_EQ(metrics::ExpositionText({family}),
            "# HELP x_total a \\\\ b\\nc\n# TYPE x_total counter\n"
            "x_total{path=\"a\\\"b\\\\c\\nd\"} 1.5\n");
  EXPECT_EQ(metrics::FormatValue(INFINITY), "+Inf");
  EXPECT_EQ(metrics::FormatValue(0.1), "0.1");
}

TEST(MetricsTest, MalformedListenIsRefused) {
  TempDir dir;
  ManualClock clock;
  PlannerOptions options = TestOptions(dir.File("t.db"), clock);
  options.metrics_listen = "no-port";
  absl::StatusOr<std::unique_ptr<PlannerServer>> server =
      PlannerServer::Start("127.0.0.1:0", options);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(server.status().message().find("--metrics-listen"),
            std::string::npos);
}

TEST(MetricsTest, BinaryPrintsTheMetricsAddressAfterTheGrpcOne) {
  TempDir dir;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const std::string db = dir.File("t.db");
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execl(TESSERA_PLANNER_BIN, TESSERA_PLANNER_BIN, "--listen", "127.0.0.1:0",
          "--metrics-listen", "127.0.0.1:0", "--db", db.c_str(), "--log",
          "warning", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  FILE* out = fdopen(fds[0], "r");
  char first[256] = {}, second[256] = {};
  ASSERT_NE(fgets(first, sizeof(first), out), nullptr);
  ASSERT_NE(fgets(second, sizeof(second), out), nullptr);
  EXPECT_EQ(std::string(first).rfind("listening on 127.0.0.1:", 0), 0u)
      << first;
  std::string metrics(second);
  ASSERT_EQ(metrics.rfind("metrics on 127.0.0.1:", 0), 0u) << metrics;
  metrics = metrics.substr(std::string("metrics on ").size());
  metrics.pop_back();  // '\n'
  const auto [code, body] = HttpGet(metrics, "GET", "/metrics");
  EXPECT_EQ(code, 200);
  EXPECT_NE(body.find("tessera_trials{state=\"ok\"} 0"), std::string::npos)
      << body;
  kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  fclose(out);
}

}  // namespace
}  // namespace tessera::service::testing
