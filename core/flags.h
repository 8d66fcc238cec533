// A small command-line flag parser, one FlagSet per subcommand (absl::flags
// keeps process-wide globals; subcommands need flags of their own). Flags are
// `--name value` or `--name=value`; switches are `--name` (or
// `--name=true|false`). Unknown flags, flags given twice (but those added as
// repeatable), missing, empty or malformed values and positional arguments
// are errors that name the flag.
//
//   std::optional<int64_t> nodes;
//   bool json = false;
//   FlagSet flags("tessera plan");
//   flags.AddInt("nodes", "N", "number of nodes", &nodes);
//   flags.AddSwitch("json", "print one JSON object", &json);
//   absl::Status s = flags.Parse({"--nodes", "32", "--json"});
//   // nodes == 32, json == true
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tessera {

class FlagSet {
 public:
  // `command` names the command in errors and help ("tessera plan").
  explicit FlagSet(std::string command);

  // Starts a titled group of flags in the help text.
  void AddSection(absl::string_view title);
  // A string flag; an empty value is an error.
  void AddString(absl::string_view name, absl::string_view value_name,
                 absl::string_view help, std::optional<std::string>* value);
  // A string flag that may be given more than once; each value is appended.
  void AddStrings(absl::string_view name, absl::string_view value_name,
                  absl::string_view help, std::vector<std::string>* values);
  // An integer flag (decimal, int64).
  void AddInt(absl::string_view name, absl::string_view value_name,
              absl::string_view help, std::optional<int64_t>* value);
  // A finite number (1e12, 0.5, 400).
  void AddDouble(absl::string_view name, absl::string_view value_name,
                 absl::string_view help, std::optional<double>* value);
  // A switch: `--name` sets true; `--name=true|false|1|0` sets either.
  void AddSwitch(absl::string_view name, absl::string_view help, bool* value);
  void AddSwitch(absl::string_view name, absl::string_view help,
                 std::optional<bool>* value);

  // Parses `args` (no program or command name) into the registered values.
  // INVALID_ARGUMENT, one line that starts with the flag: "--nodes: 'x' is
  // not an integer", "--nodez: unknown flag (did you mean --nodes?)".
  absl::Status Parse(const std::vector<std::string>& args);

  // The flags, grouped by section, one per line with their help.
  std::string Help() const;

  // Whether `args` ask for help (-h, --help, or help=true).
  static bool WantsHelp(const std::vector<std::string>& args);

 private:
  struct Flag {
    std::string name;
    std::string value_name;  // "" for switches
    std::string help;
    std::string section;
    bool is_switch = false;
    bool repeatable = false;
    std::function<absl::Status(absl::string_view)> set;
  };
  static Flag MakeFlag(absl::string_view name, absl::string_view value_name,
                       absl::string_view help);
  void Add(Flag flag);
  const Flag* Find(absl::string_view name) const;
  std::string Suggest(absl::string_view name) const;

  std::string command_;
  std::string section_;
  std::vector<Flag> flags_;
};

}  // namespace tessera
