// What a command agent agrees to run, and as whom: the agent's own policy
// file (tessera-agent --command-policy FILE), the agent-side half of "who
// may run what" (docs/security.md). A study's command reaches an agent from
// whoever could submit a study; the agent runs it only when the policy file
// its operator wrote allows it. Without a file the policy is empty and every
// command is refused.
//
// The file, one rule a line ('#' starts a comment line):
//
//   # the user commands run as (a name, or UID:GID); the agent's own
//   # credentials must be unreadable to it
//   run-as    tessera-command
//   # a command template allowed as written, byte for byte (the study's
//   # trials.command must equal it; placeholders are filled in, each value
//   # shell-quoted, and /bin/sh -c runs it)
//   template  /usr/bin/torchrun --nnodes {nodes} ... /opt/train.py {config}
//   # a program allowed with any arguments: the study's command must be a
//   # plain word list (no shell syntax: only [A-Za-z0-9_./:=,+@%-], spaces
//   # and placeholders) whose first word is this absolute path
//   program   /opt/train/run.sh
//
// The file is a security policy: others may not write it (group or world
// writable is refused at start-up, naming the file).
//
//   TESSERA_ASSIGN_OR_RETURN(CommandPolicy policy,
//                            ReadCommandPolicyFile("/etc/tessera/commands"));
//   absl::Status s = CheckCommandAllowed(policy, assignment.command());
//   // PERMISSION_DENIED "command refused: not allowed by ...: '<command>'"
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tessera::agents {

// The account a command runs as.
struct RunAsUser {
  std::string name;  // as the policy names it ("tessera-command", "1001:1001")
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;  // "" when unknown (a numeric UID:GID)
};

struct CommandPolicy {
  std::string source;  // the file it came from; "" = none (empty policy)
  std::vector<std::string> templates;
  std::vector<std::string> programs;
  std::optional<RunAsUser> run_as;
};

// Parses a policy file's text; `source` names it in errors. INVALID_ARGUMENT
// "<source>: line N: ..." for an unknown rule, a rule without its value, a
// program that is not an absolute path, a second run-as, a run-as user that
// does not exist or is root (uid 0).
absl::StatusOr<CommandPolicy> ParseCommandPolicy(absl::string_view text,
                                                 absl::string_view source);

// Reads and parses `path`. INVALID_ARGUMENT naming the file when it cannot
// be read or when its group or others may write it.
absl::StatusOr<CommandPolicy> ReadCommandPolicyFile(const std::string& path);

// OK when `policy` allows `command` (a template byte for byte, or a plain
// word list starting with an allowed program); PERMISSION_DENIED naming the
// command and the policy's source otherwise (an empty policy refuses all).
absl::Status CheckCommandAllowed(const CommandPolicy& policy,
                                 absl::string_view command);

}  // namespace tessera::agents
