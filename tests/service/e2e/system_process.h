// Child processes for the system tests: the real tessera-planner,
// tessera-agent and tessera binaries, started with posix_spawn, their output
// in files, stopped by signal.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace tessera::e2e {

class ChildProcess {
 public:
  // Starts `argv` (argv[0] is the binary's path) with stdout and stderr
  // appended to `log`. Aborts the test binary if it cannot start.
  ChildProcess(std::vector<std::string> argv, std::string log);
  ~ChildProcess();  // SIGKILL and reap, if still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  void Signal(int sig);
  // Waits up to `timeout` for the exit; returns the exit status (128 + n for
  // death by signal n), or -1 when it is still running.
  int Wait(absl::Duration timeout);

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = -1;
};

// Runs `argv` to completion (at most `timeout`), returns its exit status and
// what it printed on stdout in *out (stderr goes to `log`).
int RunToEnd(const std::vector<std::string>& argv, const std::string& log,
             absl::Duration timeout, std::string* out);

// The whole content of a file ("" when missing).
std::string ReadFile(const std::string& path);

// Polls `condition` every 50 ms until it holds or `timeout` passes.
template <typename Fn>
bool WaitFor(absl::Duration timeout, Fn&& condition) {
  const absl::Time until = absl::Now() + timeout;
  while (absl::Now() < until) {
    if (condition()) return true;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return condition();
}

}  // namespace tessera::e2e
