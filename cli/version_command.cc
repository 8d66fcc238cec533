#include "cli/version_command.h"

#include "cli/exit_codes.h"
#include "core/flags.h"
#include "core/version.h"

namespace tessera::cli {

int RunVersion(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err) {
  constexpr char kCommand[] = "tessera version";
  FlagSet flags(kCommand);
  if (FlagSet::WantsHelp(args)) {
    out << "Usage: tessera version\n\n"
           "Prints Tessera's version and the git commit it was built from\n"
           "(as `tessera --version` does).\n";
    return kExitOk;
  }
  if (absl::Status s = flags.Parse(args); !s.ok()) {
    return ReportError(err, kCommand, s);
  }
  out << VersionLine("tessera") << "\n";
  return kExitOk;
}

}  // namespace tessera::cli
