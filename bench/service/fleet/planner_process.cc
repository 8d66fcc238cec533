#include "bench/service/fleet/planner_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace tessera::bench {
namespace {

constexpr char kListening[] = "listening on ";

}  // namespace

absl::StatusOr<std::unique_ptr<PlannerProcess>> PlannerProcess::Start(
    const PlannerProcessOptions& options) {
  if (options.binary.empty() || ::access(options.binary.c_str(), X_OK) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--planner-binary: '", options.binary, "' is not an executable"));
  }
  std::unique_ptr<PlannerProcess> p(new PlannerProcess(options));
  if (p->options_.log_path.empty()) {
    p->options_.log_path = absl::StrCat(options.db_path, ".log");
  }
  if (absl::Status s = p->Launch(options.listen); !s.ok()) return s;
  return p;
}

PlannerProcess::~PlannerProcess() {
  if (pid_ > 0) (void)SignalAndWait(SIGKILL);
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
}

absl::Status PlannerProcess::Launch(const std::string& listen) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  std::vector<std::string> args;
  if (options_.cpu >= 0) {
    args = {"taskset", "-c", absl::StrCat(options_.cpu)};
  }
  args.push_back(options_.binary);
  for (const std::string& a :
       {std::string("--listen"), listen, std::string("--db"), options_.db_path,
        std::string("--log"), options_.log_level}) {
    args.push_back(a);
  }
  args.insert(args.end(), options_.extra_args.begin(),
              options_.extra_args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int log_fd = ::open(options_.log_path.c_str(),
                            O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) {
    return absl::InternalError(absl::StrCat(
        "cannot open ", options_.log_path, ": ", std::strerror(errno)));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execvp(argv[0], argv.data());
    _exit(127);
  }
  ::close(out[1]);
  ::close(log_fd);
  pid_ = pid;
  // The first line: "listening on HOST:PORT".
  std::string line;
  const absl::Time deadline = absl::Now() + options_.start_timeout;
  while (!absl::StrContains(line, '\n')) {
    pollfd fd{.fd = out[0], .events = POLLIN, .revents = 0};
    const int ms = static_cast<int>(
        absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (ms <= 0 || ::poll(&fd, 1, ms) <= 0) break;
    char buffer[256];
    const ssize_t n = ::read(out[0], buffer, sizeof buffer);
    if (n <= 0) break;
    line.append(buffer, static_cast<size_t>(n));
  }
  // Kept open (later lines, e.g. "metrics on", must not meet a closed pipe).
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  stdout_fd_ = out[0];
  const size_t at = line.find(kListening);
  const size_t end = line.find('\n');
  if (at == std::string::npos || end == std::string::npos) {
    (void)SignalAndWait(SIGKILL);
    return absl::UnavailableError(
        absl::StrCat("tessera-planner did not start (", options_.binary,
                     "); its log ends:\n", LogTail(10)));
  }
  address_ = line.substr(at + sizeof(kListening) - 1, end - at - (sizeof(kListening) - 1));
  return absl::OkStatus();
}

absl::Status PlannerProcess::SignalAndWait(int signal) {
  if (pid_ <= 0) return absl::FailedPreconditionError("planner not running");
  ::kill(pid_, signal);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return absl::OkStatus();
}

absl::Status PlannerProcess::Stop() { return SignalAndWait(SIGTERM); }
absl::Status PlannerProcess::Kill() { return SignalAndWait(SIGKILL); }

absl::Status PlannerProcess::Restart() {
  if (pid_ > 0) return absl::FailedPreconditionError("planner still running");
  return Launch(address_);
}

std::string PlannerProcess::LogTail(int lines) const {
  std::ifstream in(options_.log_path);
  std::deque<std::string> tail;
  for (std::string line; std::getline(in, line);) {
    tail.push_back(line);
    if (static_cast<int>(tail.size()) > lines) tail.pop_front();
  }
  return absl::StrJoin(tail, "\n");
}

}  // namespace tessera::bench
