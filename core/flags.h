// A small command-line flag parser, one FlagSet per subcommand (absl::flags
// keeps process-wide globals; subcommands need flags of their own). Flags are
// `--name value` or `--name=value` (a flag with a short name also `-o value`
// or `-o=value`); switches are `--name` (or `--name=true|false`). Unknown
// flags, flags given twice (but those added as repeatable), missing, empty
// or malformed values, positional arguments and unmet requirements are
// errors that name the flag; Parse reports all of them, one line each.
// Sizes take suffixes: `--seq-len 8k`, `--total-tokens 1.5T`, `--memory
// 80GiB` (see ParseSize).
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
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tessera {

// What a size flag counts, which decides the suffixes it takes.
enum class SizeUnit {
  // Things (tokens, sequences): decimal k, M, G, T, P (x1000) and binary Ki,
  // Mi, Gi, Ti (x1024), for a 64Ki-token context.
  kCount,
  // Bytes: binary Ki, Mi, Gi, Ti or KiB, MiB, GiB, TiB only; k, M, G, T, KB,
  // MB, GB and TB are refused as ambiguous (is 80G 80e9 or 80 x 2^30?).
  kBytes,
};

// `text` as a whole number of `unit`: an optional sign, a decimal number
// (digits, an optional fraction, an optional exponent: 1e12) and an
// optional suffix that multiplies it exactly ("1.5k" is 1500, "64Ki" 65536).
// INVALID_ARGUMENT, a message without the flag ("'8q' is not a number with
// an optional suffix (k, M, G, T, P; Ki, Mi, Gi, Ti)", "'1.0001k' is not an
// integer", "'80G' is ambiguous for bytes: ..."); OUT_OF_RANGE past int64.
absl::StatusOr<int64_t> ParseSize(absl::string_view text, SizeUnit unit);

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
  // A whole count or byte size with an optional suffix (ParseSize); the
  // help text gains the suffixes it takes.
  void AddSize(absl::string_view name, absl::string_view value_name,
               absl::string_view help, SizeUnit unit,
               std::optional<int64_t>* value);
  // A finite number (1e12, 0.5, 400).
  void AddDouble(absl::string_view name, absl::string_view value_name,
                 absl::string_view help, std::optional<double>* value);
  // A switch: `--name` sets true; `--name=true|false|1|0` sets either.
  void AddSwitch(absl::string_view name, absl::string_view help, bool* value);
  void AddSwitch(absl::string_view name, absl::string_view help,
                 std::optional<bool>* value);

  // Gives the registered flag `name` a one-letter short form: `-o json`,
  // `-o=json`.
  void AddShortName(char short_name, absl::string_view name);

  // Adds a check that runs after every argument is read (also when some
  // were bad): it returns one line per unmet requirement ("cluster.nodes:
  // required (--nodes N)"), none when met. `given(name)` says whether the
  // arguments named flag `name` (well-formed or not), so that a bad value
  // is not also reported missing.
  using Requirement = std::function<std::vector<std::string>(
      const std::function<bool(absl::string_view)>& given)>;
  void AddRequirement(Requirement requirement);

  // Parses `args` (no program or command name) into the registered values.
  // INVALID_ARGUMENT listing every problem, one line each (joined by "\n"),
  // each starting with its flag: "--nodes: 'x' is not an integer",
  // "--nodez: unknown flag (did you mean --nodes?)", then the unmet
  // requirements.
  absl::Status Parse(const std::vector<std::string>& args);

  // The flags, grouped by section, one per line with their help.
  std::string Help() const;

  // Whether `args` ask for help (-h, --help, or help=true).
  static bool WantsHelp(const std::vector<std::string>& args);

  // Whether `args` ask for the version (--version).
  static bool WantsVersion(const std::vector<std::string>& args);

 private:
  struct Flag {
    std::string name;
    std::string value_name;  // "" for switches
    std::string help;
    std::string section;
    bool is_switch = false;
    bool repeatable = false;
    char short_name = 0;  // 0: none
    std::function<absl::Status(absl::string_view)> set;
  };
  static Flag MakeFlag(absl::string_view name, absl::string_view value_name,
                       absl::string_view help);
  void Add(Flag flag);
  const Flag* Find(absl::string_view name) const;
  const Flag* FindShort(char short_name) const;
  // The problems with args[*i] (and its value, which it consumes).
  std::vector<std::string> ParseOne(const std::vector<std::string>& args,
                                    size_t* i,
                                    std::set<std::string, std::less<>>* seen);
  std::string Suggest(absl::string_view name) const;

  std::string command_;
  std::string section_;
  std::vector<Flag> flags_;
  std::vector<Requirement> requirements_;
};

}  // namespace tessera
