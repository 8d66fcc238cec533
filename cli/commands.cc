#include "cli/commands.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/best_command.h"
#include "cli/calibrate_command.h"
#include "cli/calibration_command.h"
#include "cli/cancel_command.h"
#include "cli/completion_command.h"
#include "cli/exit_codes.h"
#include "cli/explain_command.h"
#include "cli/history_command.h"
#include "cli/plan_command.h"
#include "cli/predict_command.h"
#include "cli/replay_command.h"
#include "cli/report_command.h"
#include "cli/studies_command.h"
#include "cli/submit_command.h"
#include "cli/trials_command.h"
#include "cli/version_command.h"
#include "cli/watch_command.h"

namespace tessera::cli {
namespace {

std::string Usage() {
  std::string text =
      "Usage: tessera <command> [flags]\n"
      "\n"
      "Tessera ranks the parallel layouts of an LLM training run (tensor,\n"
      "pipeline, context and sharded data parallelism, micro-batch, ZeRO,\n"
      "recompute) on a GPU cluster by predicted throughput and energy.\n"
      "\n"
      "Commands:\n";
  for (const Command& c : Commands()) {
    absl::StrAppend(&text, absl::StrFormat("  %-10s %s\n", c.name, c.summary));
  }
  absl::StrAppend(&text, "\nRun `tessera <command> --help` for its flags.\n\n",
                  kExitStatusHelp);
  return text;
}

const Command* Find(const std::string& name) {
  for (const Command& c : Commands()) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

}  // namespace

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"plan", "rank every feasible layout of a workload (offline cost model)",
       &RunPlan},
      {"predict", "predict one layout: step time, throughput, memory, energy",
       &RunPredict},
      {"explain",
       "one layout's full account: rank, step and memory by part, vs the "
       "best",
       &RunExplain},
      {"calibrate", "fit the cost model to measured runs and collectives",
       &RunCalibrate},
      {"calibration",
       "import a calibration file into the planner, or export its own",
       &RunCalibration},
      {"submit", "send a study to the planner service (--wait: follow it)",
       &RunSubmit},
      {"watch", "follow a study's trials until its recommendation", &RunWatch},
      {"studies", "list the planner's studies", &RunStudies},
      {"trials", "list trials with what they measured (filters, --sort)",
       &RunTrials},
      {"best", "a study's best layout for throughput or energy", &RunBest},
      {"history", "what every study measured, grouped by layout", &RunHistory},
      {"report", "write a study as one self-contained HTML page", &RunReport},
      {"replay",
       "trials to the best layout, measured on a sweep of real runs",
       &RunReplay},
      {"cancel", "cancel a study", &RunCancel},
      {"completion", "print a bash or zsh completion script",
       &RunCompletion},
      {"version", "print the version and the git commit built",
       &RunVersion},
  };
  return commands;
}

int RunTessera(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err) {
  if (args.empty()) {
    err << Usage();
    return kExitBadInput;
  }
  const std::string& name = args[0];
  if (name == "--help" || name == "-h" || name == "help") {
    if (args.size() > 1 && name == "help") {
      if (const Command* c = Find(args[1])) return c->run({"--help"}, out, err);
    }
    out << Usage();
    return kExitOk;
  }
  if (name == "--version") return RunVersion({}, out, err);
  const Command* command = Find(name);
  if (command == nullptr) {
    std::vector<std::string> names;
    for (const Command& c : Commands()) names.push_back(c.name);
    return ReportError(err, "tessera",
                       absl::InvalidArgumentError(absl::StrCat(
                           "unknown command '", name,
                           "' (commands: ", absl::StrJoin(names, ", "),
                           "; see tessera --help)")));
  }
  return command->run(std::vector<std::string>(args.begin() + 1, args.end()),
                      out, err);
}

}  // namespace tessera::cli
