// The `tessera` binary: see cli/commands.h and `tessera --help`.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/exit_codes.h"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return tessera::cli::RunTessera(args, std::cout, std::cerr);
  } catch (const std::exception& e) {
    // Nothing below throws by design; this keeps a bug from being a crash.
    std::cerr << "tessera: internal error: " << e.what() << "\n";
    return tessera::cli::kExitFailure;
  }
}
