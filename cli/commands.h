// The `tessera` command line: its subcommands in one table, and the dispatch
// that main() and the tests call. A new subcommand is one file pair
// (cli/<name>_command.{h,cc} with its Run function) and one row in
// Commands().
//
//   std::ostringstream out, err;
//   int status = RunTessera({"plan", "--spec", "study.json"}, out, err);
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera::cli {

// Runs one subcommand with the arguments that follow its name, writing its
// output to `out` and one-line errors to `err`; returns the exit status.
using CommandFn = int (*)(const std::vector<std::string>& args,
                          std::ostream& out, std::ostream& err);

struct Command {
  const char* name;
  const char* summary;  // one line for `tessera --help`
  CommandFn run;
};

// Every subcommand, in the order `tessera --help` lists them.
const std::vector<Command>& Commands();

// `tessera <command> [args...]` (args without the program name). No command
// or an unknown one is a usage error (exit 2); `tessera --help`, `tessera
// help` and `tessera help <command>` print help (exit 0).
int RunTessera(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err);

}  // namespace tessera::cli
