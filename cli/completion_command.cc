#include "cli/completion_command.h"

#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "core/flags.h"

namespace tessera::cli {
namespace {

constexpr char kCommand[] = "tessera completion";

constexpr char kAbout[] =
    "Usage: tessera completion bash|zsh\n"
    "\n"
    "Prints a completion script for the shell: commands, each command's\n"
    "flags, the choices of flags that take one of a list, else file names.\n"
    "\n"
    "Examples:\n"
    "  source <(tessera completion bash)     # in ~/.bashrc\n"
    "  source <(tessera completion zsh)      # in ~/.zshrc, after compinit\n";

// The column where FlagSet::Help starts a flag's help.
constexpr size_t kHelpColumn = 28;

// A value name that is a list of literal words ("table|wide|json|csv"; not
// placeholders in capitals such as "GIB|FRACTION").
std::vector<std::string> Choices(absl::string_view value_name) {
  if (!absl::StrContains(value_name, '|')) return {};
  for (char c : value_name) {
    if (!absl::ascii_islower(c) && !absl::ascii_isdigit(c) && c != '|' &&
        c != '-' && c != '_') {
      return {};
    }
  }
  return absl::StrSplit(value_name, '|', absl::SkipEmpty());
}

// bash: the words of a list, for compgen -W.
std::string Words(const std::vector<std::string>& words) {
  return absl::StrJoin(words, " ");
}

// zsh: text inside an _arguments spec's [help] and single quotes.
std::string ZshHelp(absl::string_view help) {
  return absl::StrReplaceAll(help, {{"'", "'\\''"},
                                    {"[", "\\["},
                                    {"]", "\\]"},
                                    {":", "\\:"},
                                    {"\\", "\\\\"}});
}

void PrintBash(std::ostream& out) {
  std::vector<std::string> names;
  for (const Command& c : Commands()) names.push_back(c.name);
  out << "# bash completion for tessera (`tessera completion bash`; "
         "generated from its commands and flags)\n"
         "_tessera() {\n"
         "  local cur=\"${COMP_WORDS[COMP_CWORD]}\"\n"
         "  local prev=\"\"\n"
         "  [[ $COMP_CWORD -gt 0 ]] && prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
         "  COMPREPLY=()\n"
         "  if [[ $COMP_CWORD -eq 1 ]]; then\n"
         "    COMPREPLY=($(compgen -W \""
      << Words(names)
      << " --help --version\" -- \"$cur\"))\n"
         "    return 0\n"
         "  fi\n"
         "  local flags=\"\" choices=\"\" value=0\n"
         "  case \"${COMP_WORDS[1]}\" in\n";
  for (const Command& c : Commands()) {
    const std::vector<CompletionFlag> flags = FlagsOfCommand(c.name);
    std::vector<std::string> flag_names = {"--help"};
    for (const CompletionFlag& f : flags) flag_names.push_back(f.name);
    out << "    " << c.name << ")\n      flags=\"" << Words(flag_names)
        << "\"\n      case \"$prev\" in\n";
    for (const CompletionFlag& f : flags) {
      if (!f.takes_value) continue;
      out << "        " << f.name << ") value=1";
      if (!f.choices.empty()) out << " choices=\"" << Words(f.choices) << "\"";
      out << " ;;\n";
    }
    out << "      esac\n      ;;\n";
  }
  out << "  esac\n"
         "  if [[ -n \"$choices\" ]]; then\n"
         "    COMPREPLY=($(compgen -W \"$choices\" -- \"$cur\"))\n"
         "  elif [[ $value -eq 0 && \"$cur\" == -* ]]; then\n"
         "    COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n"
         "  else\n"
         "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
         "  fi\n"
         "  return 0\n"
         "}\n"
         "complete -o filenames -F _tessera tessera\n";
}

void PrintZsh(std::ostream& out) {
  out << "#compdef tessera\n"
         "# zsh completion for tessera (`tessera completion zsh`; generated "
         "from its commands and flags)\n"
         "_tessera() {\n"
         "  local -a commands\n"
         "  commands=(\n";
  for (const Command& c : Commands()) {
    out << "    '" << c.name << ":" << ZshHelp(c.summary) << "'\n";
  }
  out << "  )\n"
         "  if (( CURRENT == 2 )); then\n"
         "    _describe -t commands 'tessera command' commands\n"
         "    return\n"
         "  fi\n"
         "  local -a specs\n"
         "  case ${words[2]} in\n";
  for (const Command& c : Commands()) {
    out << "    " << c.name << ")\n      specs=(\n";
    for (const CompletionFlag& f : FlagsOfCommand(c.name)) {
      out << "        '" << f.name << "[" << ZshHelp(f.help) << "]";
      if (f.takes_value) {
        if (f.choices.empty()) {
          out << ":value:_files";
        } else {
          out << ":value:(" << Words(f.choices) << ")";
        }
      }
      out << "'\n";
    }
    out << "      ) ;;\n";
  }
  out << "  esac\n"
         "  shift words\n"
         "  (( CURRENT-- ))\n"
         "  _arguments -s $specs '*:file:_files'\n"
         "}\n"
         "if [[ \"${funcstack[1]}\" == _tessera ]]; then\n"
         "  _tessera \"$@\"\n"
         "else\n"
         "  compdef _tessera tessera\n"
         "fi\n";
}

}  // namespace

std::vector<CompletionFlag> FlagsOfCommand(const std::string& command) {
  std::vector<CompletionFlag> flags;
  const Command* found = nullptr;
  for (const Command& c : Commands()) {
    if (command == c.name) found = &c;
  }
  if (found == nullptr) return flags;
  std::ostringstream help, ignored;
  found->run({"--help"}, help, ignored);
  const std::vector<std::string> lines = absl::StrSplit(help.str(), '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    // FlagSet::Help's lines: "  --name VALUE   help" or "  -o, --name ...",
    // the help on the next line (at kHelpColumn) when the usage is long.
    absl::string_view line = lines[i];
    if (!absl::ConsumePrefix(&line, "  ")) continue;
    std::string short_name;
    if (line.size() > 4 && line[0] == '-' && line[1] != '-' &&
        absl::StartsWith(line.substr(2), ", --")) {
      short_name = std::string(line.substr(0, 2));
      line.remove_prefix(4);
    }
    if (!absl::StartsWith(line, "--")) continue;
    // The usage alone when the help is on the next line, else the usage is
    // the first kHelpColumn characters.
    const bool help_below =
        i + 1 < lines.size() &&
        absl::StartsWith(lines[i + 1], std::string(kHelpColumn, ' '));
    absl::string_view usage = line;
    std::string help_text;
    if (help_below) {
      help_text = lines[i + 1];
    } else if (lines[i].size() > kHelpColumn) {
      usage = absl::string_view(lines[i]).substr(2, kHelpColumn - 2);
      if (!short_name.empty()) usage.remove_prefix(4);
      help_text = lines[i].substr(kHelpColumn);
    }
    const std::vector<absl::string_view> words =
        absl::StrSplit(usage, ' ', absl::SkipEmpty());
    if (words.empty()) continue;
    CompletionFlag f;
    f.name = std::string(words[0]);
    if (words.size() > 1) {
      f.takes_value = true;
      f.choices = Choices(words[1]);
    }
    f.help = std::string(absl::StripAsciiWhitespace(help_text));
    flags.push_back(f);
    if (!short_name.empty()) {
      f.name = short_name;
      flags.push_back(f);
    }
  }
  return flags;
}

int RunCompletion(const std::vector<std::string>& args, std::ostream& out,
                  std::ostream& err) {
  if (FlagSet::WantsHelp(args)) {
    out << kAbout;
    return kExitOk;
  }
  if (args.size() != 1 || (args[0] != "bash" && args[0] != "zsh")) {
    return ReportError(
        err, kCommand,
        absl::InvalidArgumentError(
            args.empty() ? "missing SHELL (usage: tessera completion bash|zsh)"
                         : absl::StrCat("shell: '", absl::StrJoin(args, " "),
                                        "' is not bash or zsh (usage: tessera "
                                        "completion bash|zsh)")));
  }
  if (args[0] == "bash") {
    PrintBash(out);
  } else {
    PrintZsh(out);
  }
  return kExitOk;
}

}  // namespace tessera::cli
