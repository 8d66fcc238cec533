// Principals and roles end to end (issue 15; proto/principals.h,
// service/access.h): a real planner on 127.0.0.1 serving TLS with a
// principals file (an admin, two users, an agent) and a client CA, and
// callers that are each of them, or an agent with a client certificate.
// Before, one shared token let anyone cancel anyone's study, register as a
// running agent and report for it.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "service/server.h"
#include "proto/principals.h"
#include "proto/transport_security.h"
#include "tessera/v1/service.grpc.pb.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

constexpr char kAdminToken[] = "admin-token-0123456789abcdef0123456789";
constexpr char kAliceToken[] = "alice-token-0123456789abcdef0123456789";
constexpr char kBobToken[] = "bob-token-0123456789abcdef0123456789ab";
constexpr char kAgentToken[] = "node-1-token-0123456789abcdef012345678";
constexpr char kCarolToken[] = "carol-token-0123456789abcdef0123456789";

class PrincipalsTest : public testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = fs::temp_directory_path() /
           absl::StrCat("tessera_principals_", getpid(), "_", counter++);
    fs::create_directories(dir_);
    MakeCertificates();
    Secret("principals",
           absl::StrCat("# role name token\n", "admin ops ", kAdminToken,
                        "\nuser alice ", kAliceToken, "\nuser bob ", kBobToken,
                        "  # a comment\n\nagent node-1 ", kAgentToken,
                        "\ncommand-user carol ", kCarolToken, "\n"));
    absl::StatusOr<ServerSecurity> security =
        ServerSecurityFromFiles({.cert_file = Path("server.pem"),
                                 .key_file = Path("server.key"),
                                 .principals_file = Path("principals"),
                                 .client_ca_file = Path("agents-ca.pem")});
    ASSERT_TRUE(security.ok()) << security.status();
    service::PlannerOptions options;
    options.db_path = Path("planner.db");
    options.log = service::Log(service::LogLevel::kOff);
    options.credentials = security->credentials;
    options.callers = security->callers;
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

  // A file only its owner can read (mode 0600), as secrets must be.
  std::string Secret(const std::string& name, const std::string& text) {
    std::ofstream(Path(name)) << text;
    fs::permissions(Path(name), fs::perms::owner_read | fs::perms::owner_write);
    return Path(name);
  }

  // ca.pem signs server.pem; agents-ca.pem signs node-7.pem (CN node-7);
  // other-ca.pem signs stranger.pem (CN node-1).
  void MakeCertificates() {
    std::ofstream(Path("san.cnf"))
        << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
    const std::string d = dir_.string();
    const std::string key =
        "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    std::vector<std::string> commands;
    for (const char* ca : {"ca", "agents-ca", "other-ca"}) {
      commands.push_back(absl::StrCat("openssl req -x509 ", key, " -keyout ", d,
                                      "/", ca, ".key -out ", d, "/", ca,
                                      ".pem -days 3650 -subj /CN=", ca));
    }
    const auto sign = [&](const std::string& name, const std::string& cn,
                          const std::string& ca, const std::string& extra) {
      commands.push_back(absl::StrCat("openssl req ", key, " -keyout ", d, "/",
                                      name, ".key -out ", d, "/", name,
                                      ".csr -subj /CN=", cn));
      commands.push_back(absl::StrCat("openssl x509 -req -in ", d, "/", name,
                                      ".csr -CA ", d, "/", ca, ".pem -CAkey ",
                                      d, "/", ca, ".key -CAcreateserial -out ",
                                      d, "/", name, ".pem -days 3650", extra));
      commands.push_back(absl::StrCat("chmod 600 ", d, "/", name, ".key"));
    };
    sign("server", "127.0.0.1", "ca",
         absl::StrCat(" -extfile ", d, "/san.cnf"));
    sign("node-7", "node-7", "agents-ca", "");
    sign("stranger", "node-1", "other-ca", "");
    for (const std::string& c : commands) {
      ASSERT_EQ(std::system((c + " > /dev/null 2>&1").c_str()), 0)
          << c << " (the openssl command comes with deploy/install-deps.sh)";
    }
  }

  std::shared_ptr<grpc::Channel> Channel(const std::string& token,
                                         const std::string& cert = "") {
    std::string token_file;
    if (!token.empty())
      token_file = Secret(absl::StrCat("t-", ++files_), token);
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> c =
        ChannelCredentialsFromFiles(
            {.ca_file = Path("ca.pem"),
             .token_file = token_file,
             .cert_file = cert.empty() ? "" : Path(cert + ".pem"),
             .key_file = cert.empty() ? "" : Path(cert + ".key")});
    EXPECT_TRUE(c.ok()) << c.status();
    return grpc::CreateChannel(server_->address(), *c);
  }

  static std::unique_ptr<grpc::ClientContext> Context() {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    return c;
  }

  grpc::Status Register(const std::shared_ptr<grpc::Channel>& channel,
                        const std::string& agent_id) {
    v1::RegisterRequest r;
    r.mutable_agent()->set_agent_id(agent_id);
    r.mutable_agent()->set_backend("cpu");
    r.mutable_agent()->set_hostname(agent_id);
    r.mutable_agent()->set_gpu_count(2);
    v1::RegisterResponse out;
    return v1::AgentService::NewStub(channel)->Register(Context().get(), r,
                                                        &out);
  }

  grpc::Status Heartbeat(const std::shared_ptr<grpc::Channel>& channel,
                         const std::string& agent_id) {
    v1::HeartbeatRequest r;
    r.set_agent_id(agent_id);
    v1::HeartbeatResponse out;
    return v1::AgentService::NewStub(channel)->Heartbeat(Context().get(), r,
                                                         &out);
  }

  // A study that waits (no agent can run it), submitted by `channel`'s
  // caller; its id, or 0.
  int64_t Submit(const std::shared_ptr<grpc::Channel>& channel) {
    v1::SubmitStudyRequest r;
    v1::StudySpec* spec = r.mutable_spec();
    spec->set_name("owned");
    spec->mutable_model()->set_preset("tiny");
    spec->mutable_cluster()->mutable_gpu()->set_preset("h100-sxm");
    spec->mutable_cluster()->set_nodes(1);
    spec->mutable_cluster()->set_gpus_per_node(64);
    spec->mutable_training()->set_global_batch(64);
    spec->mutable_training()->set_seq_len(128);
    spec->mutable_training()->set_total_tokens(1e9);
    spec->mutable_trials()->set_backend("cpu");
    v1::SubmitStudyResponse out;
    const grpc::Status s = v1::PlannerService::NewStub(channel)->SubmitStudy(
        Context().get(), r, &out);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return out.study_id();
  }

  grpc::Status Cancel(const std::shared_ptr<grpc::Channel>& channel,
                      int64_t study) {
    v1::CancelStudyRequest r;
    r.set_study_id(study);
    v1::CancelStudyResponse out;
    return v1::PlannerService::NewStub(channel)->CancelStudy(Context().get(), r,
                                                             &out);
  }

  fs::path dir_;
  int files_ = 0;
  std::unique_ptr<service::PlannerServer> server_;
};

TEST_F(PrincipalsTest, AnAgentActsOnlyAsItself) {
  const auto agent = Channel(kAgentToken);
  EXPECT_TRUE(Register(agent, "node-1").ok());
  EXPECT_TRUE(Heartbeat(agent, "node-1").ok());
  // Another agent's id: the review's "re-register as a running agent".
  const grpc::Status other = Register(agent, "node-2");
  EXPECT_EQ(other.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(other.error_message(),
            "agent node-1 may act only as agent node-1, not as agent "
            "'node-2'");
  // ... nor report for one's lease.
  v1::ReportTrialRequest report;
  report.set_agent_id("node-2");
  report.set_trial_id(1);
  report.set_result_json("{}");
  v1::ReportTrialResponse ignored;
  EXPECT_EQ(v1::AgentService::NewStub(agent)
                ->ReportTrial(Context().get(), report, &ignored)
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // Agents do not use the PlannerService.
  v1::ListStudiesResponse studies;
  const grpc::Status list = v1::PlannerService::NewStub(agent)->ListStudies(
      Context().get(), {}, &studies);
  EXPECT_EQ(list.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(list.error_message().find("agent node-1 may not call ListStudies"),
            std::string::npos)
      << list.error_message();
}

// Issue 28, attack 1: a plain user's command study was accepted and ran on
// every command agent. Now only a command-user or an admin may submit one.
TEST_F(PrincipalsTest, OnlyCommandUsersAndAdminsSubmitCommandStudies) {
  v1::SubmitStudyRequest r;
  v1::StudySpec* spec = r.mutable_spec();
  spec->mutable_model()->set_preset("tiny");
  spec->mutable_cluster()->mutable_gpu()->set_preset("h100-sxm");
  spec->mutable_cluster()->set_nodes(1);
  spec->mutable_cluster()->set_gpus_per_node(8);
  spec->mutable_training()->set_global_batch(64);
  spec->mutable_training()->set_seq_len(128);
  spec->mutable_training()->set_total_tokens(1e9);
  spec->mutable_training()->set_stack("pytorch-ddp");
  spec->mutable_trials()->set_backend("command");
  spec->mutable_trials()->set_command(
      "id > /tmp/pwned; echo {config} {dp} {zero} {micro_batch}");
  const auto submit = [&](const char* token) {
    v1::SubmitStudyResponse out;
    return v1::PlannerService::NewStub(Channel(token))
        ->SubmitStudy(Context().get(), r, &out);
  };
  const grpc::Status denied = submit(kAliceToken);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(denied.error_message().find(
                "user alice may not submit a study of backend \"command\""),
            std::string::npos)
      << denied.error_message();
  EXPECT_EQ(submit(kAgentToken).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  for (const char* token : {kCarolToken, kAdminToken}) {
    const grpc::Status taken = submit(token);
    EXPECT_TRUE(taken.ok()) << taken.error_message();
  }
}

TEST_F(PrincipalsTest, UsersAndAdminsAreNotAgents) {
  for (const char* token : {kAliceToken, kAdminToken}) {
    const grpc::Status s = Register(Channel(token), "node-1");
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED)
        << s.error_message();
    EXPECT_NE(s.error_message().find("may not call the AgentService"),
              std::string::npos)
        << s.error_message();
  }
}

TEST_F(PrincipalsTest, OnlyTheOwnerOrAnAdminCancelsAStudy) {
  const auto alice = Channel(kAliceToken);
  const auto bob = Channel(kBobToken);
  const int64_t alices = Submit(alice);
  const int64_t bobs = Submit(bob);
  ASSERT_GT(alices, 0);
  ASSERT_GT(bobs, 0);
  // The owner is recorded and shown.
  v1::GetStudyRequest get;
  get.set_study_id(alices);
  v1::GetStudyResponse study;
  ASSERT_TRUE(v1::PlannerService::NewStub(bob)
                  ->GetStudy(Context().get(), get, &study)
                  .ok());
  EXPECT_EQ(study.study().owner(), "alice");

  const grpc::Status denied = Cancel(bob, alices);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(denied.error_message(),
            absl::StrCat("user bob may not cancel study ", alices,
                         ": it is alice's (its owner or an admin may)"));
  EXPECT_TRUE(Cancel(alice, alices).ok());
  EXPECT_TRUE(Cancel(Channel(kAdminToken), bobs).ok());
  // An agent cancels nothing.
  EXPECT_EQ(Cancel(Channel(kAgentToken), alices).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(PrincipalsTest, AClientCertificateNamesItsAgent) {
  const auto node7 = Channel("", "node-7");
  EXPECT_TRUE(Register(node7, "node-7").ok());
  EXPECT_EQ(Register(node7, "node-1").error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // A certificate another CA signed does not get through, whatever its name.
  EXPECT_NE(Register(Channel("", "stranger"), "node-1").error_code(),
            grpc::StatusCode::OK);
  // Neither token nor certificate, or a token the file does not name.
  const grpc::Status none = Register(Channel(""), "node-7");
  EXPECT_EQ(none.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(
      Register(Channel("not-a-token-0123456789abcdef0123456789"), "node-7")
          .error_code(),
      grpc::StatusCode::UNAUTHENTICATED);
}

TEST(PrincipalsFileTest, BadLinesAreErrorsNamingTheLine) {
  const std::string t = "0123456789abcdef0123456789abcdef";
  struct Case {
    std::string text;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"", "--principals-file: names no principal"},
      {"# only a comment\n", "--principals-file: names no principal"},
      {"root ops " + t, "--principals-file: line 1: unknown role 'root'"},
      {"user alice", "--principals-file: line 1: want 'ROLE NAME TOKEN'"},
      {"\nuser alice short",
       "--principals-file: line 2: the token of alice "
       "has 5 characters; at least 32"},
      {"user al/ice " + t, "--principals-file: line 1: name 'al/ice'"},
      {"user alice " + t + "\nadmin alice x" + t,
       "--principals-file: line 2: the name alice is given twice"},
      {"user alice " + t + "\nadmin bob " + t,
       "--principals-file: line 2: the token of bob is another principal's"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<PrincipalTable> r =
        ParsePrincipals(c.text, "--principals-file");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind(c.error, 0), 0u) << r.status();
  }
  absl::StatusOr<PrincipalTable> ok =
      ParsePrincipals("agent node-1 " + t + " # x\n", "--principals-file");
  ASSERT_TRUE(ok.ok()) << ok.status();
  ASSERT_EQ(ok->size(), 1u);
  EXPECT_EQ(ok->at(t).name, "node-1");
  EXPECT_EQ(ok->at(t).role, Role::kAgent);
}

}  // namespace
}  // namespace tessera
