// A trial command template: the study's `trials.command`, the user's own
// training command with {name} placeholders that an agent fills in for each
// trial (the layout's degrees, the workload, the model's dimensions, the
// gang's rendezvous, the trial's files). "{{" and "}}" are literal braces.
// The planner checks a template at submission (CheckCommandTemplate); the
// agent expands it (ExpandCommandTemplate) and runs it with /bin/sh -c, so
// each value is shell-quoted when it holds anything but [A-Za-z0-9_./:=,+@%-].
//
//   TESSERA_RETURN_IF_ERROR(CheckCommandTemplate("torchrun --nnodes {nodes}"));
//   TESSERA_ASSIGN_OR_RETURN(std::string line,
//       ExpandCommandTemplate(text, {{"nodes", "2"}, ...}));
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tessera {

struct CommandPlaceholder {
  const char* name;     // "tp"
  const char* meaning;  // "tensor-parallel degree"
};

// Every placeholder a template may use, in a fixed order (the agent fills
// each; see agents/command_launch.cc).
const std::vector<CommandPlaceholder>& CommandPlaceholders();

// The placeholders `text` uses, in order of first use. INVALID_ARGUMENT
// naming the offending placeholder and its offset for an unknown name
// ("unknown placeholder {foo} at offset 12; known: ..."), an unclosed "{",
// a stray "}", or an empty template.
absl::StatusOr<std::vector<std::string>> CommandTemplatePlaceholders(
    absl::string_view text);

// OK when CommandTemplatePlaceholders accepts `text`.
absl::Status CheckCommandTemplate(absl::string_view text);

// `text` with every placeholder replaced by its shell-quoted value from
// `values`. The template's errors as above; INVALID_ARGUMENT "no value for
// {name}" when `values` lacks a placeholder the text uses.
absl::StatusOr<std::string> ExpandCommandTemplate(
    absl::string_view text, const std::map<std::string, std::string>& values);

// `value` as one word of /bin/sh: unchanged when it is non-empty and only
// [A-Za-z0-9_./:=,+@%-], else in single quotes ('\'' for each quote).
std::string ShellQuote(absl::string_view value);

}  // namespace tessera
