#include "cli/operands.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tessera::cli {

Operands SplitOperands(const std::vector<std::string>& args,
                       const std::vector<std::string>& switches) {
  Operands result;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      result.operands.insert(result.operands.end(), args.begin() + i + 1,
                             args.end());
      break;
    }
    if (!absl::StartsWith(arg, "--")) {
      // "-x" stays a flag so that FlagSet names it as an unknown one; a
      // short flag ("-o json") takes the next argument as its value, as
      // FlagSet::Parse does.
      if (absl::StartsWith(arg, "-") && arg.size() > 1) {
        result.flags.push_back(arg);
        if (arg.size() == 2 && i + 1 < args.size() &&
            !absl::StartsWith(args[i + 1], "-")) {
          result.flags.push_back(args[++i]);
        }
      } else {
        result.operands.push_back(arg);
      }
      continue;
    }
    result.flags.push_back(arg);
    const std::string name = arg.substr(2);
    const bool takes_value =
        name.find('=') == std::string::npos &&
        std::find(switches.begin(), switches.end(), name) == switches.end() &&
        name != "help";
    if (takes_value && i + 1 < args.size() &&
        !absl::StartsWith(args[i + 1], "--")) {
      result.flags.push_back(args[++i]);
    }
  }
  return result;
}

absl::Status ExpectOperands(const Operands& operands,
                            const std::vector<std::string>& names,
                            absl::string_view usage) {
  if (operands.operands.size() < names.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "missing ", names[operands.operands.size()], " (usage: ", usage, ")"));
  }
  if (operands.operands.size() > names.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument '", operands.operands[names.size()],
                     "' (usage: ", usage, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> ParseStudyId(absl::string_view text) {
  int64_t id = 0;
  const bool digits =
      !text.empty() && std::all_of(text.begin(), text.end(),
                                   [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || !absl::SimpleAtoi(text, &id) || id <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "study: '", text, "' is not a study id (a positive integer)"));
  }
  return id;
}

}  // namespace tessera::cli
