#include "agents/command_policy.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/command_template.h"
#include "core/file_io.h"

namespace tessera::agents {
namespace {

absl::Status LineError(absl::string_view source, int line,
                       absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(source, ": line ", line, ": ", what));
}

// The account `name` names: a user name, or "UID:GID" (containers whose
// image has no such user).
absl::StatusOr<RunAsUser> LookUpUser(absl::string_view name) {
  RunAsUser user;
  user.name = std::string(name);
  std::vector<absl::string_view> ids = absl::StrSplit(name, ':');
  if (ids.size() == 2) {
    uint32_t uid = 0, gid = 0;
    if (!absl::SimpleAtoi(ids[0], &uid) || !absl::SimpleAtoi(ids[1], &gid)) {
      return absl::InvalidArgumentError(
          absl::StrCat("run-as '", name, "': UID:GID must be two numbers"));
    }
    user.uid = uid;
    user.gid = gid;
    return user;
  }
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  const int rc = ::getpwnam_r(user.name.c_str(), &entry, buffer.data(),
                              buffer.size(), &found);
  if (rc != 0 || found == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "run-as '", name, "': no such user",
        rc != 0 ? absl::StrCat(" (", std::strerror(rc), ")") : ""));
  }
  user.uid = found->pw_uid;
  user.gid = found->pw_gid;
  user.home = found->pw_dir != nullptr ? found->pw_dir : "";
  return user;
}

// Characters a plain word list may hold: what ShellQuote leaves unquoted.
bool PlainWordCharacter(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         std::strchr("_./:=,+@%-", c) != nullptr;
}

// Why `command` is not a plain word list of literal characters and
// placeholders ("" when it is).
std::string ShellSyntaxIn(absl::string_view command) {
  for (size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (c == '{' && i + 1 < command.size() && command[i + 1] != '{') {
      const size_t close = command.find('}', i);
      if (close == std::string::npos) return "an unclosed '{'";
      i = close;
      continue;
    }
    if (c == ' ' || c == '\t' || PlainWordCharacter(c)) continue;
    return absl::StrCat("the character '", absl::string_view(&command[i], 1),
                        "' at offset ", i,
                        " (a program rule allows no shell syntax)");
  }
  return "";
}

}  // namespace

absl::StatusOr<CommandPolicy> ParseCommandPolicy(absl::string_view text,
                                                 absl::string_view source) {
  CommandPolicy policy;
  policy.source = std::string(source);
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.find_first_of(" \t");
    const absl::string_view rule = line.substr(0, space);
    const absl::string_view value =
        space == absl::string_view::npos
            ? absl::string_view()
            : absl::StripAsciiWhitespace(line.substr(space));
    if (rule != "run-as" && rule != "template" && rule != "program") {
      return LineError(source, number,
                       absl::StrCat("unknown rule '", rule,
                                    "' (run-as, template or program)"));
    }
    if (value.empty()) {
      return LineError(source, number,
                       absl::StrCat("'", rule, "' needs a value"));
    }
    if (rule == "run-as") {
      if (policy.run_as.has_value()) {
        return LineError(source, number, "a second run-as");
      }
      absl::StatusOr<RunAsUser> user = LookUpUser(value);
      if (!user.ok()) return LineError(source, number, user.status().message());
      if (user->uid == 0 || user->gid == 0) {
        return LineError(source, number,
                         absl::StrCat("run-as '", value,
                                      "' is root: commands must run as an "
                                      "unprivileged user"));
      }
      policy.run_as = *std::move(user);
    } else if (rule == "template") {
      if (absl::Status s = CheckCommandTemplate(value); !s.ok()) {
        return LineError(source, number, s.message());
      }
      policy.templates.emplace_back(value);
    } else {
      if (value[0] != '/' || value.find_first_of(" \t") != value.npos) {
        return LineError(source, number,
                         absl::StrCat("program '", value,
                                      "' must be one absolute path"));
      }
      policy.programs.emplace_back(value);
    }
  }
  return policy;
}

absl::StatusOr<CommandPolicy> ReadCommandPolicyFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--command-policy: cannot read '", path, "': ", std::strerror(errno)));
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--command-policy: '", path,
        "' may be written by its group or by others (chmod go-w): it decides "
        "what this agent runs"));
  }
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--command-policy: cannot read '", path, "': ", text.status().message()));
  }
  return ParseCommandPolicy(*text, path);
}

absl::Status CheckCommandAllowed(const CommandPolicy& policy,
                                 absl::string_view command) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(command);
  for (const std::string& allowed : policy.templates) {
    if (trimmed == absl::StripAsciiWhitespace(allowed)) return absl::OkStatus();
  }
  std::string why;
  for (const std::string& program : policy.programs) {
    // The program, then the end or a character that is no part of a path.
    if (!absl::StartsWith(trimmed, program) ||
        (trimmed.size() > program.size() &&
         PlainWordCharacter(trimmed[program.size()]))) {
      continue;
    }
    why = ShellSyntaxIn(trimmed);
    if (why.empty()) return absl::OkStatus();
  }
  const std::string where =
      policy.source.empty()
          ? std::string(
                "this agent has no --command-policy file, so it runs no "
                "command")
          : absl::StrCat("not allowed by ", policy.source);
  return absl::PermissionDeniedError(absl::StrCat(
      "command refused: ", where, why.empty() ? "" : absl::StrCat(": ", why),
      ": '", trimmed, "'"));
}

}  // namespace tessera::agents
