#include "agents/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "core/status_macros.h"

extern char** environ;

namespace tessera::agents {
namespace {

ExitStatus FromWaitStatus(int status) {
  ExitStatus exit;
  if (WIFEXITED(status)) {
    exit.exited = true;
    exit.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    exit.signal = WTERMSIG(status);
  }
  return exit;
}

// posix_spawn's file actions and attributes, destroyed on every path.
class SpawnSetup {
 public:
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions_);
    posix_spawnattr_init(&attr_);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions_);
    posix_spawnattr_destroy(&attr_);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;

  // Redirections, then the working folder (output paths are opened
  // relative to the agent's folder, before the chdir).
  int Configure(const ProcessSpec& spec) {
    const auto output = [](const std::string& path) {
      return path.empty() ? std::string("/dev/null") : path;
    };
    // No O_CLOEXEC: these descriptors are the child's stdout and stderr.
    const int flags = O_WRONLY | O_CREAT | O_TRUNC;
    int rc = posix_spawn_file_actions_addopen(&actions_, 0, "/dev/null",
                                              O_RDONLY, 0);
    if (rc == 0) {
      stdout_ = output(spec.stdout_path);
      rc = posix_spawn_file_actions_addopen(&actions_, 1, stdout_.c_str(),
                                            flags, 0644);
    }
    if (rc == 0) {
      stderr_ = output(spec.stderr_path);
      rc = posix_spawn_file_actions_addopen(&actions_, 2, stderr_.c_str(),
                                            flags, 0644);
    }
    if (rc == 0 && !spec.working_dir.empty()) {
      rc = posix_spawn_file_actions_addchdir_np(&actions_,
                                                spec.working_dir.c_str());
    }
    if (rc != 0) return rc;
    // Its own process group (pgid = its pid), no blocked signals, and the
    // default action for the signals the agent handles or ignores.
    sigset_t empty, defaults;
    sigemptyset(&empty);
    sigemptyset(&defaults);
    for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
                    SIGCHLD}) {
      sigaddset(&defaults, sig);
    }
    posix_spawnattr_setflags(&attr_, POSIX_SPAWN_SETPGROUP |
                                         POSIX_SPAWN_SETSIGMASK |
                                         POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attr_, 0);
    posix_spawnattr_setsigmask(&attr_, &empty);
    posix_spawnattr_setsigdefault(&attr_, &defaults);
    return 0;
  }

  const posix_spawn_file_actions_t* actions() const { return &actions_; }
  const posix_spawnattr_t* attr() const { return &attr_; }

 private:
  posix_spawn_file_actions_t actions_;
  posix_spawnattr_t attr_;
  std::string stdout_, stderr_;  // kept alive for the file actions
};

}  // namespace

std::string ExitStatus::Describe() const {
  if (exited) return absl::StrCat("exit ", exit_code);
  if (signal == 0) return "ended (exit status lost)";
  return absl::StrCat("killed by signal ", signal, " (", strsignal(signal),
                      ")");
}

namespace {

// util-linux's setpriv (Debian and Ubuntu ship it in an Essential package):
// `setpriv --pdeathsig KILL -- PROGRAM ARGS` sets PR_SET_PDEATHSIG and
// execs PROGRAM, which keeps it. posix_spawn itself cannot set it.
constexpr char kSetpriv[] = "/usr/bin/setpriv";

// The value of PATH the child will see: spec.env's, else the agent's.
std::string ChildPath(const ProcessSpec& spec) {
  for (const std::string& entry : spec.env) {
    if (absl::StartsWith(entry, "PATH=")) return entry.substr(5);
  }
  const char* path = std::getenv("PATH");
  return path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
}

// What `program` runs, as the child's exec would find it: a name with a
// slash as it is (relative to the child's working directory), else the
// first executable of that name on the child's PATH. UNAVAILABLE naming
// the program when there is none, as posix_spawnp would fail.
absl::StatusOr<std::string> ResolveProgram(const ProcessSpec& spec) {
  const std::string& program = spec.argv[0];
  if (program.find('/') != std::string::npos) {
    const std::string where =
        program[0] == '/' || spec.working_dir.empty()
            ? program
            : absl::StrCat(spec.working_dir, "/", program);
    if (access(where.c_str(), X_OK) != 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot start '", program, "': ", std::strerror(errno)));
    }
    return program;
  }
  for (absl::string_view dir : absl::StrSplit(ChildPath(spec), ':')) {
    const std::string candidate =
        absl::StrCat(dir.empty() ? "." : dir, "/", program);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::UnavailableError(
      absl::StrCat("cannot start '", program, "': ", std::strerror(ENOENT)));
}

}  // namespace

absl::StatusOr<ChildProcess> ChildProcess::Start(const ProcessSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) {
    return absl::InvalidArgumentError("process.argv: empty");
  }
  SpawnSetup setup;
  if (int rc = setup.Configure(spec); rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot set up '", spec.argv[0],
                                               "': ", std::strerror(rc)));
  }
  std::vector<std::string> args = spec.argv;
  const bool setpriv = access(kSetpriv, X_OK) == 0;
  if (spec.run_as.has_value() && !setpriv) {
    return absl::UnavailableError(absl::StrCat(
        "cannot start '", spec.argv[0], "' as uid ", spec.run_as->uid, ": ",
        kSetpriv, " (util-linux) is missing"));
  }
  if ((spec.die_with_parent || spec.run_as.has_value()) && setpriv) {
    TESSERA_ASSIGN_OR_RETURN(std::string program, ResolveProgram(spec));
    args[0] = std::move(program);
    std::vector<std::string> prefix = {kSetpriv};
    if (spec.die_with_parent) {
      prefix.insert(prefix.end(), {"--pdeathsig", "KILL"});
    }
    if (spec.run_as.has_value()) {
      // The account's ids and nothing more: no groups of the agent's, no
      // capability to keep or inherit, no setuid program to regain any.
      prefix.insert(prefix.end(),
                    {absl::StrCat("--reuid=", spec.run_as->uid),
                     absl::StrCat("--regid=", spec.run_as->gid),
                     "--clear-groups", "--inh-caps=-all",
                     "--ambient-caps=-all", "--no-new-privs"});
    }
    prefix.push_back("--");
    args.insert(args.begin(), prefix.begin(), prefix.end());
  }
  std::vector<char*> argv;
  for (const std::string& arg : args) {
    argv.push_back(const_cast<char*>(arg.c_str()));
  }
  argv.push_back(nullptr);
  // The agent's environment less the names spec.env sets, then spec.env.
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e) {
    const absl::string_view entry(*e);
    const absl::string_view name = entry.substr(0, entry.find('='));
    const bool replaced =
        std::any_of(spec.env.begin(), spec.env.end(), [&](const auto& mine) {
          return absl::string_view(mine).substr(0, mine.find('=')) == name;
        });
    const bool dropped = std::any_of(
        spec.drop_env_prefixes.begin(), spec.drop_env_prefixes.end(),
        [&](const std::string& prefix) {
          return absl::StartsWith(name, prefix);
        });
    if (!replaced && !dropped) envp.push_back(*e);
  }
  for (const std::string& entry : spec.env) {
    envp.push_back(const_cast<char*>(entry.c_str()));
  }
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0], setup.actions(), setup.attr(),
                              argv.data(), envp.data());
  if (rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot start '", spec.argv[0], "': ", std::strerror(rc)));
  }
  return ChildProcess(pid);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), exit_(std::move(other.exit_)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    KillAndReap();
    pid_ = std::exchange(other.pid_, -1);
    exit_ = std::move(other.exit_);
  }
  return *this;
}

ChildProcess::~ChildProcess() { KillAndReap(); }

void ChildProcess::KillAndReap() {
  if (pid_ <= 0 || exit_.has_value()) return;
  SignalGroup(SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  exit_ = FromWaitStatus(status);
}

std::optional<ExitStatus> ChildProcess::Poll() {
  if (exit_.has_value() || pid_ <= 0) return exit_;
  int status = 0;
  pid_t done;
  do {
    done = ::waitpid(pid_, &status, WNOHANG);
  } while (done < 0 && errno == EINTR);
  if (done == pid_) {
    exit_ = FromWaitStatus(status);
  } else if (done < 0) {
    // ECHILD: someone else reaped it (SIGCHLD ignored); the status is lost.
    exit_ = ExitStatus{.exited = false, .exit_code = 0, .signal = 0};
  }
  return exit_;
}

void ChildProcess::SignalGroup(int signal) const {
  if (pid_ > 0) ::kill(-pid_, signal);
}

void ProcessGroupRegistry::Add(pid_t group) {
  absl::MutexLock lock(&mutex_);
  groups_.insert(group);
}

void ProcessGroupRegistry::Remove(pid_t group) {
  absl::MutexLock lock(&mutex_);
  groups_.erase(group);
}

void ProcessGroupRegistry::SignalAll(int signal) {
  absl::MutexLock lock(&mutex_);
  for (pid_t group : groups_) ::kill(-group, signal);
}

size_t ProcessGroupRegistry::size() const {
  absl::MutexLock lock(&mutex_);
  return groups_.size();
}

}  // namespace tessera::agents
