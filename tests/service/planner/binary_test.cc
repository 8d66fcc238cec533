// The tessera-planner binary: --listen with port 0 prints the bound address
// first, serves, and SIGTERM stops it cleanly (exit 0); bad flags exit 2.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tests/service/planner/test_harness.h"

namespace tessera::service::testing {
namespace {

struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;  // its stdout
};

Child Spawn(const std::vector<std::string>& args) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  Child c;
  c.pid = fork();
  if (c.pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> argv;
    for (const std::string& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  c.out = fdopen(fds[0], "r");
  return c;
}

int WaitExit(pid_t pid) {
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(BinaryTest, ListensOnAFreePortAndStopsOnSigterm) {
  TempDir dir;
  Child c = Spawn({TESSERA_PLANNER_BIN, "--listen", "127.0.0.1:0", "--db",
                   dir.File("t.db"), "--heartbeat-interval-ms", "200",
                   "--lease-timeout-s", "2", "--agent-timeout-s", "5", "--log",
                   "warning"});
  ASSERT_GT(c.pid, 0);
  char line[256] = {};
  ASSERT_NE(fgets(line, sizeof(line), c.out), nullptr);
  const std::string first(line);
  ASSERT_EQ(first.rfind("listening on 127.0.0.1:", 0), 0u) << first;
  const std::string address =
      first.substr(std::string("listening on ").size(),
                   first.size() - std::string("listening on ").size() - 1);

  auto channel =
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto agents = v1::AgentService::NewStub(channel);
  v1::RegisterRequest reg;
  reg.mutable_agent()->set_agent_id("cpu-a");
  reg.mutable_agent()->set_hostname("h");
  reg.mutable_agent()->set_backend("cpu");
  reg.mutable_agent()->set_gpu_count(2);
  v1::RegisterResponse registered;
  ASSERT_TRUE(agents->Register(Context().get(), reg, &registered).ok());
  EXPECT_EQ(registered.heartbeat_interval_ms(), 200);
  EXPECT_EQ(registered.agent_id(), "cpu-a");

  ASSERT_EQ(kill(c.pid, SIGTERM), 0);
  EXPECT_EQ(WaitExit(c.pid), 0);
  fclose(c.out);
  EXPECT_TRUE(std::filesystem::exists(dir.File("t.db")));
}

// --backup copies the store a running planner serves, and the copy serves
// as a store: a study submitted before the backup is in it.
TEST(BinaryTest, BackupOfAServingStoreIsAStoreWithItsStudies) {
  TempDir dir;
  Child c = Spawn({TESSERA_PLANNER_BIN, "--listen", "127.0.0.1:0", "--db",
                   dir.File("t.db"), "--log", "error"});
  char line[256] = {};
  ASSERT_NE(fgets(line, sizeof(line), c.out), nullptr);
  std::string address(line);
  address = address.substr(std::string("listening on ").size());
  address.pop_back();
  auto planner = v1::PlannerService::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  v1::SubmitStudyRequest submit;
  *submit.mutable_spec() = TinySpec(1, 2);
  submit.mutable_spec()->set_name("kept in the backup");
  v1::SubmitStudyResponse submitted;
  ASSERT_TRUE(planner->SubmitStudy(Context().get(), submit, &submitted).ok());

  Child b = Spawn({TESSERA_PLANNER_BIN, "--db", dir.File("t.db"), "--backup",
                   dir.File("backup.db")});
  EXPECT_EQ(WaitExit(b.pid), 0);
  fclose(b.out);
  Child again = Spawn({TESSERA_PLANNER_BIN, "--db", dir.File("t.db"),
                       "--backup", dir.File("backup.db")});
  EXPECT_EQ(WaitExit(again.pid), 2);  // never overwrites
  fclose(again.out);
  ASSERT_EQ(kill(c.pid, SIGTERM), 0);
  EXPECT_EQ(WaitExit(c.pid), 0);
  fclose(c.out);

  // Served from the backup.
  Child r = Spawn({TESSERA_PLANNER_BIN, "--listen", "127.0.0.1:0", "--db",
                   dir.File("backup.db"), "--log", "error"});
  ASSERT_NE(fgets(line, sizeof(line), r.out), nullptr);
  address = std::string(line).substr(std::string("listening on ").size());
  address.pop_back();
  planner = v1::PlannerService::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  v1::GetStudyRequest get;
  get.set_study_id(submitted.study_id());
  v1::GetStudyResponse study;
  ASSERT_TRUE(planner->GetStudy(Context().get(), get, &study).ok());
  EXPECT_EQ(study.study().name(), "kept in the backup");
  ASSERT_EQ(kill(r.pid, SIGTERM), 0);
  EXPECT_EQ(WaitExit(r.pid), 0);
  fclose(r.out);
}

TEST(BinaryTest, BadFlagsExitTwo) {
  Child c = Spawn({TESSERA_PLANNER_BIN, "--listen"});
  EXPECT_EQ(WaitExit(c.pid), 2);
  fclose(c.out);
  Child d = Spawn({TESSERA_PLANNER_BIN, "--log", "loud"});
  EXPECT_EQ(WaitExit(d.pid), 2);
  fclose(d.out);
}

// The planner binary SIGKILLed mid-study and started again on its file: the
// study resumes, the earlier result is there once, the running trial's
// report lands once.
TEST(BinaryTest, AKilledPlannerResumesTheStudyFromItsFile) {
  TempDir dir;
  const std::vector<std::string> args = {
      TESSERA_PLANNER_BIN, "--listen", "127.0.0.1:0", "--db",
      dir.File("t.db"),    "--log",    "error"};
  auto start = [&](Child* c) -> std::string {
    *c = Spawn(args);
    char line[256] = {};
    if (fgets(line, sizeof(line), c->out) == nullptr) return "";
    std::string first(line);
    first = first.substr(std::string("listening on ").size());
    first.pop_back();  // the newline
    return first;
  };
  Child first;
  const std::string address = start(&first);
  ASSERT_FALSE(address.empty());
  auto channel =
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto agents = v1::AgentService::NewStub(channel);
  auto planner = v1::PlannerService::NewStub(channel);
  v1::RegisterRequest reg;
  reg.mutable_agent()->set_agent_id("cpu-a");
  reg.mutable_agent()->set_hostname("h");
  reg.mutable_agent()->set_backend("cpu");
  reg.mutable_agent()->set_gpu_count(2);
  v1::RegisterResponse registered;
  ASSERT_TRUE(agents->Register(Context().get(), reg, &registered).ok());
  v1::SubmitStudyRequest submit;
  *submit.mutable_spec() = TinySpec(1, 2);
  submit.mutable_spec()->mutable_trials()->set_max_trials(2);
  submit.mutable_spec()->mutable_trials()->set_stop_margin(10);
  v1::SubmitStudyResponse submitted;
  ASSERT_TRUE(planner->SubmitStudy(Context().get(), submit, &submitted).ok());
  // The next trial is queued when the planner has taken the last result
  // in (its advancer, after the report returns): poll as agents do.
  auto lease = [&](v1::AgentService::Stub* stub) {
    v1::LeaseTrialRequest r;
    r.set_agent_id("cpu-a");
    v1::LeaseTrialResponse out;
    for (int i = 0; i < 200 && !out.has_assignment(); ++i) {
      if (i > 0) absl::SleepFor(absl::Milliseconds(20));
      EXPECT_TRUE(stub->LeaseTrial(Context().get(), r, &out).ok());
    }
    return out.assignment();
  };
  auto report = [&](v1::AgentService::Stub* stub,
                    const v1::TrialAssignment& a) {
    v1::ReportTrialRequest r;
    r.set_agent_id("cpu-a");
    r.set_trial_id(a.trial_id());
    r.set_result_json(OkResultJson(a, 0.01));
    v1::ReportTrialResponse out;
    return stub->ReportTrial(Context().get(), r, &out);
  };
  const v1::TrialAssignment one = lease(agents.get());
  ASSERT_GT(one.trial_id(), 0);
  ASSERT_TRUE(report(agents.get(), one).ok());
  const v1::TrialAssignment two = lease(agents.get());
  ASSERT_GT(two.trial_id(), 0);
  ASSERT_EQ(kill(first.pid, SIGKILL), 0);
  EXPECT_EQ(WaitExit(first.pid), 128 + SIGKILL);
  fclose(first.out);

  Child second;
  const std::string again = start(&second);
  ASSERT_FALSE(again.empty());
  channel = grpc::CreateChannel(again, grpc::InsecureChannelCredentials());
  agents = v1::AgentService::NewStub(channel);
  planner = v1::PlannerService::NewStub(channel);
  v1::GetStudyRequest get;
  get.set_study_id(submitted.study_id());
  v1::GetStudyResponse study;
  ASSERT_TRUE(planner->GetStudy(Context().get(), get, &study).ok());
  EXPECT_EQ(study.study().state(), v1::STUDY_RUNNING);
  EXPECT_EQ(study.study().trials_done(), 1);
  ASSERT_TRUE(report(agents.get(), two).ok());
  EXPECT_EQ(report(agents.get(), two).error_code(),
            grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(report(agents.get(), one).error_code(),
            grpc::StatusCode::ALREADY_EXISTS);
  // The advancer ends the study (rung 0 of 2 keeps one layout).
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(planner->GetStudy(Context().get(), get, &study).ok());
    if (study.study().state() == v1::STUDY_DONE) break;
    absl::SleepFor(absl::Milliseconds(25));
  }
  EXPECT_EQ(study.study().state(), v1::STUDY_DONE);
  EXPECT_EQ(study.study().trials_done(), 2);
  EXPECT_EQ(study.study().trials_total(), 2);
  ASSERT_EQ(kill(second.pid, SIGTERM), 0);
  EXPECT_EQ(WaitExit(second.pid), 0);
  fclose(second.out);
}

}  // namespace
}  // namespace tessera::service::testing
