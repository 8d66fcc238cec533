// `tessera completion bash|zsh`: a shell completion script for `tessera`,
// generated from the command table (cli/commands.h) and each command's own
// flags (what its FlagSet prints under --help), so it cannot drift from
// them: commands after `tessera`, each command's flags after a `-`, the
// choices of a flag whose value is a list (`-o table|wide|json|csv`,
// `--objective throughput|energy`), else file names.
//
//   source <(tessera completion bash)      # ~/.bashrc
//   source <(tessera completion zsh)       # ~/.zshrc (after compinit)
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera::cli {

// One flag of a command, as its help lists it.
struct CompletionFlag {
  std::string name;                  // "--output", "-o"
  std::string help;                  // its help text, one line
  bool takes_value = false;          // false for switches
  std::vector<std::string> choices;  // from a value name "a|b|c"
};

// The flags `tessera <command> --help` lists, in order (a flag with a
// short name gives two entries, the long one first).
std::vector<CompletionFlag> FlagsOfCommand(const std::string& command);

// Runs `tessera completion` with `args` (the shell: bash or zsh); a missing
// or unknown shell is a usage error (exit 2).
int RunCompletion(const std::vector<std::string>& args, std::ostream& out,
                  std::ostream& err);

}  // namespace tessera::cli
