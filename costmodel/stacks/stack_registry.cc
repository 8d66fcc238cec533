// The stacks compiled into the binary: costmodel/stacks/*.json, embedded by
// cmake/embed_files.cmake, parsed once and checked on first use.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/known_names.h"
#include "costmodel/stacks/training_stack.h"

namespace tessera::costmodel {
namespace {

struct StackFile {
  const char* name;
  const char* text;
};

constexpr StackFile kStackFiles[] = {
#include "costmodel/stacks/stack_files.inc"
};

std::vector<TrainingStack>& MutableStacks() {
  static std::vector<TrainingStack>* stacks = [] {
    auto* out = new std::vector<TrainingStack>;
    for (const StackFile& f : kStackFiles) {
      absl::StatusOr<TrainingStack> s = ParseStack(f.name, f.text);
      if (!s.ok()) {
        // A stack file that does not parse is a build defect; the stack
        // test names it. Fail loudly rather than plan with a partial set.
        std::cerr << "tessera: built-in training stack " << f.name
                  << " is invalid: " << s.status().message() << "\n";
        std::abort();
      }
      out->push_back(*std::move(s));
    }
    return out;
  }();
  return *stacks;
}

}  // namespace

const std::vector<TrainingStack>& Stacks() { return MutableStacks(); }

absl::Status UseStackFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot be read"));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<TrainingStack> s = ParseStack(path, text.str());
  if (!s.ok()) return s.status();
  std::vector<TrainingStack>& stacks = MutableStacks();
  for (TrainingStack& existing : stacks) {
    if (existing.name == s->name) {
      existing = *std::move(s);
      return absl::OkStatus();
    }
  }
  stacks.push_back(*std::move(s));
  return absl::OkStatus();
}

std::vector<std::string> StackNames() {
  std::vector<std::string> names;
  for (const TrainingStack& s : Stacks()) names.push_back(s.name);
  return names;
}

absl::StatusOr<const TrainingStack*> FindStack(absl::string_view name) {
  for (const TrainingStack& s : Stacks()) {
    if (absl::EqualsIgnoreCase(s.name, name)) return &s;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "training.stack: ", UnknownNameMessage("stack", name, StackNames())));
}

}  // namespace tessera::costmodel
