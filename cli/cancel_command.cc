#include "cli/cancel_command.h"

#include "cli/exit_codes.h"
#include "cli/planner_client.h"
#include "cli/service_names.h"
#include "core/flags.h"

namespace tessera::cli {
namespace {

constexpr char kCommand[] = "tessera cancel";

constexpr char kAbout[] =
    "Usage: tessera cancel ID [--planner HOST:PORT]\n"
    "\n"
    "Cancels study ID: its queued trials are dropped and its running ones\n"
    "stopped; what its trials measured stays in the history. Prints the\n"
    "study's state afterwards (a study that had already ended keeps its\n"
    "state).\n"
    "\n"
    "Example:\n"
    "  tessera cancel 7\n";

}  // namespace

int RunCancel(const std::vector<std::string>& args, std::ostream& out,
              std::ostream& err) {
  FlagSet flags(kCommand);
  PlannerFlags planner;
  planner.Register(&flags, kPlannerFlagHelp);
  if (FlagSet::WantsHelp(args)) {
    out << kAbout << flags.Help() << "\n" << kServiceExitStatusHelp;
    return kExitOk;
  }
  absl::StatusOr<int64_t> id =
      ParseStudyArgs(args, {}, "tessera cancel ID", flags, planner);
  if (!id.ok()) return ReportError(err, kCommand, id.status());
  PlannerClient client(planner.Address(), planner.Timeout(),
                       planner.Credentials());
  absl::StatusOr<v1::CancelStudyResponse> r = client.CancelStudy(*id);
  if (!r.ok()) return ReportError(err, kCommand, r.status());
  const v1::StudySummary& s = r->study();
  out << "study " << *id << " " << StudyStateName(s.state()) << ": "
      << s.trials_done() << "/" << s.trials_total() << " trials done\n";
  return kExitOk;
}

}  // namespace tessera::cli
