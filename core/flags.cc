#include "core/flags.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace tessera {
namespace {

absl::Status FlagError(absl::string_view name, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("--", name, ": ", message));
}

// Levenshtein distance, for "did you mean" on a mistyped flag.
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

absl::StatusOr<bool> ParseBool(absl::string_view name, absl::string_view text) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  return FlagError(name, absl::StrCat("'", text, "' is not true or false"));
}

}  // namespace

FlagSet::Flag FlagSet::MakeFlag(absl::string_view name,
                                absl::string_view value_name,
                                absl::string_view help) {
  Flag f;
  f.name = std::string(name);
  f.value_name = std::string(value_name);
  f.help = std::string(help);
  return f;
}

FlagSet::FlagSet(std::string command) : command_(std::move(command)) {}

void FlagSet::AddSection(absl::string_view title) {
  section_ = std::string(title);
}

void FlagSet::Add(Flag flag) {
  flag.section = section_;
  flags_.push_back(std::move(flag));
}

void FlagSet::AddString(absl::string_view name, absl::string_view value_name,
                        absl::string_view help,
                        std::optional<std::string>* value) {
  Flag f = MakeFlag(name, value_name, help);
  f.set = [value](absl::string_view text) {
    *value = std::string(text);
    return absl::OkStatus();
  };
  Add(std::move(f));
}

void FlagSet::AddStrings(absl::string_view name, absl::string_view value_name,
                         absl::string_view help,
                         std::vector<std::string>* values) {
  Flag f = MakeFlag(name, value_name, absl::StrCat(help, " (repeatable)"));
  f.repeatable = true;
  f.set = [values](absl::string_view text) {
    values->push_back(std::string(text));
    return absl::OkStatus();
  };
  Add(std::move(f));
}

void FlagSet::AddInt(absl::string_view name, absl::string_view value_name,
                     absl::string_view help, std::optional<int64_t>* value) {
  Flag f = MakeFlag(name, value_name, help);
  f.set = [value, flag = std::string(name)](absl::string_view text) {
    int64_t n = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, n);
    if (ec == std::errc::result_out_of_range) {
      return FlagError(flag, absl::StrCat("'", text, "' is out of range"));
    }
    if (ec != std::errc() || ptr != end) {
      return FlagError(flag, absl::StrCat("'", text, "' is not an integer"));
    }
    *value = n;
    return absl::OkStatus();
  };
  Add(std::move(f));
}

void FlagSet::AddDouble(absl::string_view name, absl::string_view value_name,
                        absl::string_view help, std::optional<double>* value) {
  Flag f = MakeFlag(name, value_name, help);
  f.set = [value, flag = std::string(name)](absl::string_view text) {
    double x = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, x);
    if (ec != std::errc() || ptr != end || !std::isfinite(x)) {
      return FlagError(flag,
                       absl::StrCat("'", text, "' is not a finite number"));
    }
    *value = x;
    return absl::OkStatus();
  };
  Add(std::move(f));
}

void FlagSet::AddSwitch(absl::string_view name, absl::string_view help,
                        bool* value) {
  Flag f = MakeFlag(name, "", help);
  f.is_switch = true;
  f.set = [value, flag = std::string(name)](absl::string_view text) {
    absl::StatusOr<bool> b = ParseBool(flag, text);
    if (!b.ok()) return b.status();
    *value = *b;
    return absl::OkStatus();
  };
  Add(std::move(f));
}

void FlagSet::AddSwitch(absl::string_view name, absl::string_view help,
                        std::optional<bool>* value) {
  Flag f = MakeFlag(name, "", help);
  f.is_switch = true;
  f.set = [value, flag = std::string(name)](absl::string_view text) {
    absl::StatusOr<bool> b = ParseBool(flag, text);
    if (!b.ok()) return b.status();
    *value = *b;
    return absl::OkStatus();
  };
  Add(std::move(f));
}

const FlagSet::Flag* FlagSet::Find(absl::string_view name) const {
  for (const Flag& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string FlagSet::Suggest(absl::string_view name) const {
  const Flag* best = nullptr;
  size_t best_distance = 3;  // suggest only close matches
  for (const Flag& f : flags_) {
    const size_t d = EditDistance(name, f.name);
    if (d < best_distance) {
      best = &f;
      best_distance = d;
    }
  }
  return best == nullptr ? "" : best->name;
}

absl::Status FlagSet::Parse(const std::vector<std::string>& args) {
  std::set<std::string, std::less<>> seen;
  for (size_t i = 0; i < args.size(); ++i) {
    const absl::string_view arg = args[i];
    if (absl::StartsWith(arg, "-") && !absl::StartsWith(arg, "--") &&
        arg.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          arg, ": unknown flag (flags are --name; see ", command_, " --help)"));
    }
    if (!absl::StartsWith(arg, "--") || arg.size() == 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unexpected argument '", arg, "' (flags are --name value; see ",
          command_, " --help)"));
    }
    absl::string_view name = arg.substr(2);
    std::optional<absl::string_view> inline_value;
    if (const size_t eq = name.find('='); eq != absl::string_view::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const Flag* flag = Find(name);
    if (flag == nullptr) {
      const std::string suggestion = Suggest(name);
      return FlagError(
          name, suggestion.empty()
                    ? absl::StrCat("unknown flag (see ", command_, " --help)")
                    : absl::StrCat("unknown flag (did you mean --", suggestion,
                                   "?)"));
    }
    if (!seen.insert(flag->name).second && !flag->repeatable) {
      return FlagError(name, "given twice");
    }
    if (flag->is_switch) {
      const absl::Status s = flag->set(inline_value.value_or("true"));
      if (!s.ok()) return s;
      continue;
    }
    absl::string_view value;
    if (inline_value.has_value()) {
      value = *inline_value;
    } else if (i + 1 < args.size() && !absl::StartsWith(args[i + 1], "--")) {
      value = args[++i];
    } else {
      return FlagError(name, absl::StrCat("missing value (--", name, " ",
                                          flag->value_name, ")"));
    }
    if (value.empty()) {
      return FlagError(name, absl::StrCat("empty value (--", name, " ",
                                          flag->value_name, ")"));
    }
    const absl::Status s = flag->set(value);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

std::string FlagSet::Help() const {
  std::string text;
  std::string section = "\x01";  // no section printed yet
  for (const Flag& f : flags_) {
    if (f.section != section) {
      section = f.section;
      if (!section.empty()) absl::StrAppend(&text, "\n", section, ":\n");
    }
    std::string usage = absl::StrCat("  --", f.name);
    if (!f.is_switch) absl::StrAppend(&usage, " ", f.value_name);
    if (usage.size() < 28)
      usage.resize(28, ' ');
    else
      absl::StrAppend(&usage, "\n", std::string(28, ' '));
    absl::StrAppend(&text, usage, f.help, "\n");
  }
  return text;
}

bool FlagSet::WantsHelp(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg == "-h" || arg == "--help" || arg == "--help=true") return true;
  }
  return false;
}

}  // namespace tessera
