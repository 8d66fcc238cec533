// TLS and the bearer token (proto/transport_security.h) end to end: a real
// planner serving TLS with a token on 127.0.0.1, certificates made by the
// openssl command for the test (a CA and a server certificate for
// 127.0.0.1), reached by the CLI, by the agent's client and by raw gRPC
// stubs; and the flags' errors, each naming the flag.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agents/planner_client.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "service/server.h"
#include "proto/transport_security.h"
#include "tessera/v1/service.grpc.pb.h"
#include "tests/cli/cli_test_util.h"

namespace tessera::cli {
namespace {

namespace fs = std::filesystem;

class PlannerTlsTest : public testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = fs::temp_directory_path() /
           absl::StrCat("tessera_tls_", getpid(), "_", counter++);
    fs::create_directories(dir_);
    MakeCertificates();
    token_ = Secret("token", "s3cret-token-for-tests-0123456789abcdef\n");
    absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
        ServerCredentialsFromFiles({.cert_file = Path("server.pem"),
                                    .key_file = Path("server.key"),
                                    .token_file = token_});
    ASSERT_TRUE(credentials.ok()) << credentials.status();
    service::PlannerOptions options;
    options.db_path = Path("planner.db");
    options.log = service::Log(service::LogLevel::kOff);
    options.credentials = *credentials;
    absl::StatusOr<std::unique_ptr<service::PlannerServer>> server =
        service::PlannerServer::Start("127.0.0.1:0", options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }

  void TearDown() override {
    server_.reset();
    fs::remove_all(dir_);
  }

  std::string Path(const std::string& name) const {
    return (dir_ / name).string();
  }

  std::string File(const std::string& name, const std::string& text) {
    std::ofstream(Path(name)) << text;
    return Path(name);
  }

  // A file only its owner can read (mode 0600), as a token must be.
  std::string Secret(const std::string& name, const std::string& text) {
    File(name, text);
    fs::permissions(Path(name), fs::perms::owner_read | fs::perms::owner_write);
    return Path(name);
  }

  // ca.pem signs server.pem (for IP 127.0.0.1 and localhost); other-ca.pem
  // signs nothing here.
  void MakeCertificates() {
    File("san.cnf", "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
    const std::string d = dir_.string();
    const std::string key =
        "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    const std::vector<std::string> commands = {
        absl::StrCat("openssl req -x509 ", key, " -keyout ", d, "/ca.key",
                     " -out ", d, "/ca.pem -days 3650 -subj /CN=tessera-ca"),
        absl::StrCat("openssl req -x509 ", key, " -keyout ", d,
                     "/other-ca.key -out ", d,
                     "/other-ca.pem -days 3650 -subj /CN=other-ca"),
        absl::StrCat("openssl req ", key, " -keyout ", d, "/server.key",
                     " -out ", d, "/server.csr -subj /CN=127.0.0.1"),
        absl::StrCat("openssl x509 -req -in ", d, "/server.csr -CA ", d,
                     "/ca.pem -CAkey ", d, "/ca.key -CAcreateserial -out ", d,
                     "/server.pem -days 3650 -extfile ", d, "/san.cnf"),
    };
    for (const std::string& c : commands) {
      ASSERT_EQ(std::system((c + " > /dev/null 2>&1").c_str()), 0)
          << c << " (the openssl command comes with deploy/install-deps.sh)";
    }
  }

  // ListStudies over a channel with `credentials`.
  grpc::Status ListStudies(
      std::shared_ptr<grpc::ChannelCredentials> credentials) {
    auto stub = v1::PlannerService::NewStub(
        grpc::CreateChannel(server_->address(), credentials));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(5));
    v1::ListStudiesRequest request;
    v1::ListStudiesResponse response;
    return stub->ListStudies(&context, request, &response);
  }

  std::shared_ptr<grpc::ChannelCredentials> Client(const std::string& ca,
                                                   const std::string& token) {
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> c =
        ChannelCredentialsFromFiles({.ca_file = ca, .token_file = token});
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *c : nullptr;
  }

  fs::path dir_;
  std::string token_;
  std::unique_ptr<service::PlannerServer> server_;
};

TEST_F(PlannerTlsTest, OnlyTlsWithTheTokenGetsThrough) {
  EXPECT_TRUE(ListStudies(Client(Path("ca.pem"), token_)).ok());

  const grpc::Status plaintext =
      ListStudies(grpc::InsecureChannelCredentials());
  EXPECT_EQ(plaintext.error_code(), grpc::StatusCode::UNAVAILABLE)
      << plaintext.error_message();

  const grpc::Status no_token = ListStudies(Client(Path("ca.pem"), ""));
  EXPECT_EQ(no_token.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(no_token.error_message().find("needs a token"), std::string::npos)
      << no_token.error_message();

  const grpc::Status wrong_token = ListStudies(
      Client(Path("ca.pem"),
             Secret("wrong", "s3cret-token-for-tests-0123456789abcdef-2")));
  EXPECT_EQ(wrong_token.error_code(), grpc::StatusCode::UNAUTHENTICATED);

  // A planner certificate signed by another CA is not trusted.
  const grpc::Status other_ca =
      ListStudies(Client(Path("other-ca.pem"), token_));
  EXPECT_EQ(other_ca.error_code(), grpc::StatusCode::UNAVAILABLE)
      << other_ca.error_message();
}

TEST_F(PlannerTlsTest, TheCliReachesItWithTheFlagsOrTheEnvironment) {
  const std::vector<std::string> base = {"studies", "--planner",
                                         server_->address(), "--json"};
  CliRun r = RunCli(
      Concat(base, {"--tls-ca", Path("ca.pem"), "--auth-token-file", token_}));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "[]\n");

  r = RunCli(Concat(base, {"--tls-ca", Path("ca.pem")}));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("needs a token"), std::string::npos) << r.err;

  setenv("TESSERA_TLS_CA", Path("ca.pem").c_str(), 1);
  setenv("TESSERA_AUTH_TOKEN_FILE", token_.c_str(), 1);
  r = RunCli(base);
  unsetenv("TESSERA_TLS_CA");
  unsetenv("TESSERA_AUTH_TOKEN_FILE");
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST_F(PlannerTlsTest, TheAgentRegistersWithTheToken) {
  agents::PlannerClientOptions options;
  options.credentials = Client(Path("ca.pem"), token_);
  std::unique_ptr<agents::PlannerClient> client =
      agents::PlannerClient::Connect(server_->address(), options);
  v1::AgentInfo info;
  info.set_agent_id("tls-agent");
  info.set_backend("cpu");
  info.set_hostname("tls-host");
  info.set_gpu_count(2);
  absl::StatusOr<v1::RegisterResponse> registered = client->Register(info);
  EXPECT_TRUE(registered.ok()) << registered.status();

  options.credentials = Client(Path("ca.pem"), "");
  client = agents::PlannerClient::Connect(server_->address(), options);
  registered = client->Register(info);
  EXPECT_EQ(registered.status().code(), absl::StatusCode::kUnauthenticated)
      << registered.status();
}

TEST_F(PlannerTlsTest, BadSecurityFilesAreErrorsNamingTheFlag) {
  const std::string not_pem = Secret("not.pem", "hello\n");
  const std::string empty_token = Secret("empty-token", " \n");
  const std::string two_lines =
      Secret("two-lines", "abcdefghijklmnopqrstuvwxyz0123456789\ndef\n");
  // The review's one-character token, and secrets others can read.
  const std::string short_token = Secret("short-token", "x\n");
  const std::string shared_token =
      File("shared-token", "s3cret-token-for-tests-0123456789abcdef\n");
  fs::copy_file(Path("server.key"), Path("shared.key"));
  fs::permissions(Path("shared.key"),
                  fs::perms::group_read | fs::perms::others_read,
                  fs::perm_options::add);
  const std::string shared_key = Path("shared.key");
  const std::string missing = Path("missing.pem");
  const auto Files = [](std::string cert, std::string key, std::string token) {
    ServerSecurityFiles f;
    f.cert_file = std::move(cert);
    f.key_file = std::move(key);
    f.token_file = std::move(token);
    return f;
  };
  struct Case {
    ServerSecurityFiles server;
    std::string error;
  };
  const std::vector<Case> server_cases = {
      {Files("", "", token_), "--auth-token-file: needs TLS"},
      {Files(Path("server.pem"), "", ""),
       "--tls-cert: give --tls-cert and --tls-key together"},
      {Files("", Path("server.key"), ""),
       "--tls-key: give --tls-cert and --tls-key together"},
      {Files(missing, Path("server.key"), ""),
       "--tls-cert: cannot read " + missing},
      {Files(Path("server.pem"), not_pem, ""),
       "--tls-key: " + not_pem + " is not PEM"},
      {Files(Path("server.pem"), Path("server.key"), empty_token),
       "--auth-token-file: " + empty_token + " holds no token"},
      {Files(Path("server.pem"), Path("server.key"), two_lines),
       "--auth-token-file: " + two_lines + " holds characters"},
      {Files(Path("server.pem"), Path("server.key"), short_token),
       "--auth-token-file: " + short_token +
           " holds a token of 1 characters; at least 32"},
      {Files(Path("server.pem"), Path("server.key"), shared_token),
       "--auth-token-file: " + shared_token + " can be read by others"},
      {Files(Path("server.pem"), shared_key, ""),
       "--tls-key: " + shared_key + " can be read by others (mode 0644)"},
  };
  for (const Case& c : server_cases) {
    SCOPED_TRACE(c.error);
    absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> r =
        ServerCredentialsFromFiles(c.server);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind(c.error, 0), 0u) << r.status();
  }
  // The CLI: exit 2, one line naming the flag, nothing sent.
  CliRun r = RunCli({"studies", "--planner", server_->address(),
                     "--auth-token-file", token_});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "tessera studies: --auth-token-file: needs --tls-ca: a token sent "
            "in plaintext is anyone's\n");
  r = RunCli({"studies", "--planner", server_->address(), "--tls-ca", not_pem});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "tessera studies: --tls-ca: " + not_pem +
                       " is not PEM (no -----BEGIN line)\n");
}

}  // namespace
}  // namespace tessera::cli
