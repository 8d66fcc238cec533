#include "agents/run_as_check.h"

#include "absl/strings/str_cat.h"
#include "agents/process_runner.h"

namespace tessera::agents {
namespace {

// The exit code of `argv` run as `user` (-1 when it could not be started
// or did not end in time; `why` says which).
int RunAs(const RunAsUser& user, std::vector<std::string> argv,
          std::string* why) {
  ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.run_as = ProcessSpec::Account{user.uid, user.gid};
  spec.working_dir = "/";
  RunLimits limits;
  limits.time_limit = absl::Seconds(30);
  absl::StatusOr<std::vector<ProcessOutcome>> ran =
      RunProcesses({spec}, limits, nullptr);
  if (!ran.ok()) {
    *why = std::string(ran.status().message());
    return -1;
  }
  const ExitStatus& exit = (*ran)[0].exit;
  if (!exit.exited) {
    *why = exit.Describe();
    return -1;
  }
  return exit.exit_code;
}

}  // namespace

absl::Status CheckRunAsIsolation(
    const RunAsUser& user, const std::vector<std::string>& private_paths) {
  std::string why;
  const int same_uid = RunAs(
      user,
      {"/bin/sh", "-c", absl::StrCat("test \"$(id -u)\" = ", user.uid)}, &why);
  if (same_uid != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "run-as ", user.name, ": this agent cannot start processes as uid ",
        user.uid,
        " (it needs root, or CAP_SETUID and CAP_SETGID: see the README's "
        "\"Security\" section)",
        why.empty() ? "" : absl::StrCat(": ", why)));
  }
  for (const std::string& path : private_paths) {
    if (path.empty()) continue;
    const int reachable =
        RunAs(user, {"/bin/sh", "-c", "test -r \"$1\" || test -w \"$1\"", "sh",
                     path},
              &why);
    if (reachable != 1) {
      return absl::FailedPreconditionError(absl::StrCat(
          "run-as ", user.name, ": '", path, "' is ",
          reachable == 0 ? "readable or writable by that user"
                         : absl::StrCat("not checkable (", why, ")"),
          "; commands must not reach the agent's credentials or result "
          "spool (make it owned by the agent's user, mode 0600 or 0700)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace tessera::agents
