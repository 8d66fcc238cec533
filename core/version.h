// The version every Tessera binary prints for --version: CMake's project
// version and, when built from a git checkout, the commit (from a header the
// build generates, cmake/tessera_version.cmake).
//
//   std::cout << VersionLine("tessera-planner") << "\n";
//   // tessera-planner 0.1.0 (git 0758219ab12c)
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace tessera {

// The project version, "0.1.0".
absl::string_view Version();

// The commit built ("0758219ab12c", "-dirty" appended for uncommitted
// changes); "" when not built from a git checkout.
absl::string_view GitCommit();

// "<program> <version>" and " (git <commit>)" when known.
std::string VersionLine(absl::string_view program);

}  // namespace tessera
