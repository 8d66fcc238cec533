// A child process that leads its own process group, so that everything it
// starts (threads, helpers, a shell's children) can be signalled at once.
// Spawned with posix_spawn (safe in a program with threads): stdin from
// /dev/null, stdout and stderr to files, an empty signal mask and default
// signal dispositions whatever the agent blocks or ignores.
//
//   ProcessSpec spec;
//   spec.argv = {"/bin/sh", "-c", "echo hi; exit 3"};
//   spec.stderr_path = dir + "/err";
//   TESSERA_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::Start(spec));
//   std::optional<ExitStatus> exit;
//   while (!(exit = child.Poll())) Sleep(absl::Milliseconds(20));
//   // exit->exited && exit->exit_code == 3
#pragma once

#include <sys/types.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace tessera::agents {

// How a process ended: exited with a code, or killed by a signal.
struct ExitStatus {
  bool exited = false;  // true: exit_code is valid; false: signal is
  int exit_code = 0;
  int signal = 0;

  bool success() const { return exited && exit_code == 0; }
  // "exit 0", "exit 3", "killed by signal 9 (Killed)"; signal 0 when the
  // status was lost (another waiter reaped the process).
  std::string Describe() const;
};

struct ProcessSpec {
  // argv[0] is the program: a path, or a name looked up on PATH.
  std::vector<std::string> argv;
  std::string working_dir;  // "": the agent's own
  std::string stdout_path;  // "": /dev/null (created or truncated otherwise)
  std::string stderr_path;  // "": /dev/null
  // "NAME=value" entries over the agent's own environment (a name given
  // here replaces the inherited one).
  std::vector<std::string> env;
  // The child is killed (SIGKILL) when the thread that started it ends —
  // with the agent, however it dies (SIGKILL included) — through
  // PR_SET_PDEATHSIG, set by util-linux's setpriv, which then execs the
  // program; where /usr/bin/setpriv is missing, not. Start it from a thread
  // that outlives it (RunProcesses waits in the thread that starts).
  bool die_with_parent = true;
  // Set: the child runs as this user and group (no supplementary groups,
  // no capabilities, no_new_privs) through /usr/bin/setpriv, which the
  // agent then needs (UNAVAILABLE without it) together with the right to
  // switch users (root, or CAP_SETUID and CAP_SETGID).
  struct Account {
    uid_t uid = 0;
    gid_t gid = 0;
  };
  std::optional<Account> run_as;
  // Inherited variables whose names start with one of these are not passed
  // on (spec.env still is): the agent's own settings stay the agent's.
  std::vector<std::string> drop_env_prefixes;
};

class ChildProcess {
 public:
  // Starts `spec` in a new process group whose id is the child's pid.
  // INVALID_ARGUMENT for an empty argv; UNAVAILABLE when the program cannot
  // be started (not found, not executable, an output file cannot be opened),
  // naming the program and the cause.
  static absl::StatusOr<ChildProcess> Start(const ProcessSpec& spec);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // A child still running is killed with its whole group and reaped.
  ~ChildProcess();

  // The child's pid, which is also its process group id.
  pid_t pid() const { return pid_; }

  // Reaps the child if it has ended (never blocks); its exit status once it
  // has, std::nullopt while it runs.
  std::optional<ExitStatus> Poll();

  // Sends `signal` to every process of the child's group; nothing when the
  // group is gone.
  void SignalGroup(int signal) const;

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  void KillAndReap();

  pid_t pid_ = -1;
  std::optional<ExitStatus> exit_;
};

// The process groups the agent has running, so that a second SIGTERM can
// kill them all before the agent leaves. Thread-safe.
class ProcessGroupRegistry {
 public:
  void Add(pid_t group);
  void Remove(pid_t group);
  // Sends `signal` to every registered group.
  void SignalAll(int signal);
  size_t size() const;

 private:
  mutable absl::Mutex mutex_;
  std::set<pid_t> groups_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace tessera::agents
