// Commands that take operands besides flags (`tessera submit study.json
// --wait`, `tessera watch 42`): the operands are split from the flags before
// core's FlagSet (which takes flags only) parses the rest. An operand is an
// argument that is neither a flag nor a flag's value; `--` ends the flags.
//
//   absl::StatusOr<Operands> a =
//       SplitOperands({"--wait", "study.json", "--planner", "h:1"}, {"wait"});
//   // a->flags == {"--wait", "--planner", "h:1"}, a->operands ==
//   //   {"study.json"}
//   absl::StatusOr<int64_t> id = ParseStudyId("42");  // 42
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tessera::cli {

struct Operands {
  std::vector<std::string> flags;     // for FlagSet::Parse, in order
  std::vector<std::string> operands;  // in order
};

// Splits `args`. `switches` names the flags that take no value (`--json`);
// any other `--name` without `=` takes the next argument as its value unless
// that argument starts with "--", and a short flag `-o` the next argument
// unless it starts with "-", as FlagSet::Parse does.
Operands SplitOperands(const std::vector<std::string>& args,
                       const std::vector<std::string>& switches);

// Exactly `count` operands, or INVALID_ARGUMENT "missing NAME (usage)" /
// "unexpected argument 'x' (usage)". `names` has `count` entries ("ID").
absl::Status ExpectOperands(const Operands& operands,
                            const std::vector<std::string>& names,
                            absl::string_view usage);

// A study id: a positive decimal integer. Errors: INVALID_ARGUMENT "study:
// 'x' is not a study id (a positive integer)".
absl::StatusOr<int64_t> ParseStudyId(absl::string_view text);

}  // namespace tessera::cli
