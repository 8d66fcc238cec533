#include "tests/service/e2e/system_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

extern char** environ;

namespace tessera::e2e {
namespace {

pid_t Spawn(const std::vector<std::string>& argv, const std::string& out_path,
            const std::string& err_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr,
                             args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    std::fprintf(stderr, "cannot start %s: error %d\n", argv[0].c_str(), rc);
    std::abort();
  }
  return pid;
}

int DecodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

ChildProcess::ChildProcess(std::vector<std::string> argv, std::string log)
    : pid_(Spawn(argv, log, log)) {}

ChildProcess::~ChildProcess() {
  if (!reaped_) {
    kill(pid_, SIGKILL);
    Wait(absl::Seconds(10));
  }
}

bool ChildProcess::running() {
  if (reaped_) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    reaped_ = true;
    status_ = DecodeStatus(status);
    return false;
  }
  return true;
}

void ChildProcess::Signal(int sig) {
  if (!reaped_) kill(pid_, sig);
}

int ChildProcess::Wait(absl::Duration timeout) {
  WaitFor(timeout, [&] { return !running(); });
  return reaped_ ? status_ : -1;
}

int RunToEnd(const std::vector<std::string>& argv, const std::string& log,
             absl::Duration timeout, std::string* out) {
  const std::string out_path = log + ".stdout";
  std::remove(out_path.c_str());
  const pid_t pid = Spawn(argv, out_path, log);
  int status = 0;
  const bool ended =
      WaitFor(timeout, [&] { return waitpid(pid, &status, WNOHANG) == pid; });
  if (!ended) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
  }
  if (out != nullptr) *out = ReadFile(out_path);
  return DecodeStatus(status);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace tessera::e2e
