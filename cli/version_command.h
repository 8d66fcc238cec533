// `tessera version` (also `tessera --version`): prints the version line,
// "tessera 0.1.0 (git 0758219ab12c)" (core/version.h).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera::cli {

// Prints the version to `out` (exit 0); any argument but --help is a usage
// error (exit 2).
int RunVersion(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err);

}  // namespace tessera::cli
