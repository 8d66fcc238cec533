#include "core/flags.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"

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

// A suffix and the power it multiplies by: base^power.
struct Suffix {
  const char* text;
  int base;  // 1000 or 1024
  int power;
};

constexpr Suffix kCountSuffixes[] = {
    {"k", 1000, 1},  {"M", 1000, 2},  {"G", 1000, 3},
    {"T", 1000, 4},  {"P", 1000, 5},  {"Ki", 1024, 1},
    {"Mi", 1024, 2}, {"Gi", 1024, 3}, {"Ti", 1024, 4}};
constexpr Suffix kByteSuffixes[] = {
    {"B", 1024, 0},   {"Ki", 1024, 1},  {"Mi", 1024, 2},
    {"Gi", 1024, 3},  {"Ti", 1024, 4},  {"KiB", 1024, 1},
    {"MiB", 1024, 2}, {"GiB", 1024, 3}, {"TiB", 1024, 4}};
// Byte suffixes people write for either 1000 or 1024: refused.
struct AmbiguousSuffix {
  const char* text;
  const char* binary;  // what to write for 1024^power
  int power;           // of 1000 or 1024
};
constexpr AmbiguousSuffix kAmbiguousByteSuffixes[] = {
    {"k", "Ki", 1},   {"K", "Ki", 1},   {"M", "Mi", 2},   {"G", "Gi", 3},
    {"T", "Ti", 4},   {"kB", "KiB", 1}, {"KB", "KiB", 1}, {"MB", "MiB", 2},
    {"GB", "GiB", 3}, {"TB", "TiB", 4}};

constexpr char kCountSuffixHelp[] = "k, M, G, T, P; Ki, Mi, Gi, Ti";
constexpr char kByteSuffixHelp[] = "Ki, Mi, Gi, Ti or KiB, MiB, GiB, TiB";

// At most this many significant digits (so that digits x 1024^4 fit 128
// bits).
constexpr int kMaxSignificantDigits = 24;

__extension__ typedef __int128 Int128;
constexpr Int128 kInt64Max = std::numeric_limits<int64_t>::max();

Int128 Power(int base, int power) {
  Int128 p = 1;
  for (int i = 0; i < power; ++i) p *= base;
  return p;
}

}  // namespace

absl::StatusOr<int64_t> ParseSize(absl::string_view text, SizeUnit unit) {
  const bool bytes = unit == SizeUnit::kBytes;
  auto malformed = [&] {
    return absl::InvalidArgumentError(
        bytes ? absl::StrCat("'", text,
                             "' is not a number of bytes with an optional "
                             "suffix (",
                             kByteSuffixHelp, ")")
              : absl::StrCat("'", text,
                             "' is not a number with an optional suffix (",
                             kCountSuffixHelp, ")"));
  };
  auto out_of_range = [&] {
    return absl::OutOfRangeError(absl::StrCat("'", text, "' is out of range"));
  };
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) {
    negative = text[i] == '-';
    ++i;
  }
  // The mantissa as digits x 10^exponent10.
  Int128 digits = 0;
  int significant = 0;
  int64_t exponent10 = 0;
  bool any_digit = false;
  bool in_fraction = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !in_fraction) {
      in_fraction = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    any_digit = true;
    if (digits == 0 && c == '0') {
      if (in_fraction) --exponent10;
      continue;
    }
    if (++significant > kMaxSignificantDigits) return out_of_range();
    digits = digits * 10 + (c - '0');
    if (in_fraction) --exponent10;
  }
  if (!any_digit) return malformed();
  // An exponent: e or E, an optional sign, digits.
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    size_t j = i + 1;
    bool exponent_negative = false;
    if (j < text.size() && (text[j] == '-' || text[j] == '+')) {
      exponent_negative = text[j] == '-';
      ++j;
    }
    if (j >= text.size() || text[j] < '0' || text[j] > '9') return malformed();
    int64_t e = 0;
    for (; j < text.size() && text[j] >= '0' && text[j] <= '9'; ++j) {
      e = std::min<int64_t>(e * 10 + (text[j] - '0'), 1000);
    }
    exponent10 += exponent_negative ? -e : e;
    i = j;
  }
  const absl::string_view suffix_text = text.substr(i);
  const Suffix* suffix = nullptr;
  if (!suffix_text.empty()) {
    for (const Suffix& s : bytes ? absl::MakeConstSpan(kByteSuffixes)
                                 : absl::MakeConstSpan(kCountSuffixes)) {
      if (suffix_text == s.text) suffix = &s;
    }
    if (suffix == nullptr) {
      if (bytes) {
        for (const AmbiguousSuffix& a : kAmbiguousByteSuffixes) {
          if (suffix_text != a.text) continue;
          const absl::string_view number = text.substr(0, i);
          return absl::InvalidArgumentError(absl::StrCat(
              "'", text, "' is ambiguous for bytes: write ", number, a.binary,
              " (x 1024^", a.power, ") or the bytes in full (", number, " x ",
              "1000^", a.power, ")"));
        }
      }
      return malformed();
    }
  }
  if (digits == 0) return int64_t{0};
  // Drop trailing zeros into the exponent, so that 1.50k is 1.5k.
  while (exponent10 < 0 && digits % 10 == 0) {
    digits /= 10;
    ++exponent10;
  }
  const Int128 multiplier =
      suffix == nullptr ? 1 : Power(suffix->base, suffix->power);
  Int128 value = digits * multiplier;  // < 10^24 x 10^15: fits
  if (exponent10 < 0) {
    if (exponent10 < -38) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", text, "' is not an integer"));
    }
    const Int128 divisor = Power(10, static_cast<int>(-exponent10));
    if (value % divisor != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", text, "' is not an integer"));
    }
    value /= divisor;
  } else {
    for (int64_t e = 0; e < exponent10; ++e) {
      if (value > kInt64Max) return out_of_range();
      value *= 10;
    }
  }
  if (value > kInt64Max) return out_of_range();
  return static_cast<int64_t>(negative ? -value : value);
}

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

void FlagSet::AddSize(absl::string_view name, absl::string_view value_name,
                      absl::string_view help, SizeUnit unit,
                      std::optional<int64_t>* value) {
  Flag f = MakeFlag(
      name, value_name,
      absl::StrCat(
          help, " (suffixes: ",
          unit == SizeUnit::kBytes ? kByteSuffixHelp : kCountSuffixHelp, ")"));
  f.set = [value, unit, flag = std::string(name)](absl::string_view text) {
    absl::StatusOr<int64_t> n = ParseSize(text, unit);
    if (!n.ok()) return FlagError(flag, n.status().message());
    *value = *n;
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

void FlagSet::AddShortName(char short_name, absl::string_view name) {
  for (Flag& f : flags_) {
    if (f.name == name) f.short_name = short_name;
  }
}

void FlagSet::AddRequirement(Requirement requirement) {
  requirements_.push_back(std::move(requirement));
}

const FlagSet::Flag* FlagSet::FindShort(char short_name) const {
  for (const Flag& f : flags_) {
    if (f.short_name == short_name) return &f;
  }
  return nullptr;
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

std::vector<std::string> FlagSet::ParseOne(
    const std::vector<std::string>& args, size_t* i,
    std::set<std::string, std::less<>>* seen) {
  const absl::string_view arg = args[*i];
  // The flag and how it was written ("--nodes", "-o").
  const Flag* flag = nullptr;
  std::string written;
  std::optional<absl::string_view> inline_value;
  if (absl::StartsWith(arg, "-") && !absl::StartsWith(arg, "--") &&
      arg.size() > 1) {
    flag = FindShort(arg[1]);
    if (flag == nullptr || (arg.size() > 2 && arg[2] != '=')) {
      if (arg.size() == 2 && *i + 1 < args.size() &&
          !absl::StartsWith(args[*i + 1], "-")) {
        ++*i;  // its value, if it has one, is not a stray argument
      }
      return {absl::StrCat(arg, ": unknown flag (flags are --name; see ",
                           command_, " --help)")};
    }
    written = std::string(arg.substr(0, 2));
    if (arg.size() > 2) inline_value = arg.substr(3);
  } else if (!absl::StartsWith(arg, "--") || arg.size() == 2) {
    return {absl::StrCat("unexpected argument '", arg,
                         "' (flags are --name value; see ", command_,
                         " --help)")};
  } else {
    absl::string_view name = arg.substr(2);
    if (const size_t eq = name.find('='); eq != absl::string_view::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    flag = Find(name);
    if (flag == nullptr) {
      // Its value, if it has one, is not a stray argument.
      if (!inline_value.has_value() && *i + 1 < args.size() &&
          !absl::StartsWith(args[*i + 1], "-")) {
        ++*i;
      }
      const std::string suggestion = Suggest(name);
      return {absl::StrCat(
          "--", name, ": ",
          suggestion.empty()
              ? absl::StrCat("unknown flag (see ", command_, " --help)")
              : absl::StrCat("unknown flag (did you mean --", suggestion,
                             "?)"))};
    }
    written = absl::StrCat("--", name);
  }
  std::vector<std::string> errors;
  auto error = [&](absl::string_view message) {
    errors.push_back(absl::StrCat(written, ": ", message));
  };
  if (!seen->insert(flag->name).second && !flag->repeatable) {
    error("given twice");
  }
  absl::string_view value;
  if (flag->is_switch) {
    value = inline_value.value_or("true");
  } else if (inline_value.has_value()) {
    value = *inline_value;
  } else if (*i + 1 < args.size() && !absl::StartsWith(args[*i + 1], "--")) {
    value = args[++*i];
  } else {
    error(absl::StrCat("missing value (", written, " ", flag->value_name, ")"));
    return errors;
  }
  if (value.empty()) {
    error(absl::StrCat("empty value (", written, " ", flag->value_name, ")"));
    return errors;
  }
  if (!errors.empty()) return errors;
  if (const absl::Status s = flag->set(value); !s.ok()) {
    // The setters' messages start "--name: "; a short name keeps its form.
    std::string message(s.message());
    if (written.size() == 2) {
      const std::string long_form = absl::StrCat("--", flag->name, ": ");
      if (absl::StartsWith(message, long_form)) {
        message = absl::StrCat(written, ": ", message.substr(long_form.size()));
      }
    }
    errors.push_back(std::move(message));
  }
  return errors;
}

absl::Status FlagSet::Parse(const std::vector<std::string>& args) {
  std::set<std::string, std::less<>> seen;
  std::vector<std::string> errors;
  for (size_t i = 0; i < args.size(); ++i) {
    for (std::string& e : ParseOne(args, &i, &seen)) {
      errors.push_back(std::move(e));
    }
  }
  const auto given = [&seen](absl::string_view name) {
    return seen.find(name) != seen.end();
  };
  for (const Requirement& requirement : requirements_) {
    for (std::string& e : requirement(given)) errors.push_back(std::move(e));
  }
  if (errors.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(errors, "\n"));
}

std::string FlagSet::Help() const {
  std::string text;
  std::string section = "\x01";  // no section printed yet
  for (const Flag& f : flags_) {
    if (f.section != section) {
      section = f.section;
      if (!section.empty()) absl::StrAppend(&text, "\n", section, ":\n");
    }
    std::string usage =
        f.short_name != 0
            ? absl::StrCat("  -", std::string(1, f.short_name), ", --", f.name)
            : absl::StrCat("  --", f.name);
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

bool FlagSet::WantsVersion(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg == "--version" || arg == "--version=true") return true;
  }
  return false;
}

}  // namespace tessera
