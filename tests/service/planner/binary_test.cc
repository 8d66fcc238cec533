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

TEST(BinaryTest, BadFlagsExitTwo) {
  Child c = Spawn({TESSERA_PLANNER_BIN, "--listen"});
  EXPECT_EQ(WaitExit(c.pid), 2);
  fclose(c.out);
  Child d = Spawn({TESSERA_PLANNER_BIN, "--log", "loud"});
  EXPECT_EQ(WaitExit(d.pid), 2);
  fclose(d.out);
}

}  // namespace
}  // namespace tessera::service::testing
