#include "cli/replay_command.h"

#include <fstream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/exit_codes.h"
#include "cli/output_format.h"
#include "cli/replay_output.h"
#include "core/flags.h"
#include "replay/sweep_replay.h"

namespace tessera::cli {
namespace {

constexpr char kCommand[] = "tessera replay";

constexpr char kAbout[] =
    "Usage: tessera replay --sweep FILE [--strategy NAME]... [flags]\n"
    "\n"
    "Replays a measured layout sweep through the planner's own study loop\n"
    "(the same ranking, successive halving, refits, stopping rule and\n"
    "recommendation as tessera-planner, in process) where a trial's outcome\n"
    "is looked up in the sweep instead of run, and beside it the model's\n"
    "order, a random order and the rule 'fewer tp and pp is faster'. It\n"
    "reports, per group of layouts of one workload, the trials until the\n"
    "held layout is within 1%, 2% and 5% of the group's best, the trials\n"
    "wasted on layouts that fail, the regret after k trials and the trials'\n"
    "cluster time.\n"
    "\n"
    "--sweep reads a sweep (shared/data/usp_sweep.json: rows with status\n"
    "ok|failed, the workload, the layout and what was measured; its\n"
    "collective_busbw_gbs_256MiB is imported as the cluster's measured\n"
    "collectives), published runs (measured_published.json: its groups of\n"
    "rows that differ only in layout) or `tessera trials -o json` output (a\n"
    "past study, replayed with today's loop).\n"
    "\n"
    "Strategies: study (each group on a fresh planner), study-history (every\n"
    "group on one planner, in the file's order), model-order, random, naive;\n"
    "default: study, model-order, random, naive.\n";

absl::StatusOr<TrialStatus> FailedAs(const std::optional<std::string>& text) {
  if (!text || *text == "oom") return TrialStatus::kOom;
  if (*text == "crash") return TrialStatus::kCrash;
  return absl::InvalidArgumentError(absl::StrCat(
      "--failed-as: '", *text, "' is not oom or crash"));
}

}  // namespace

int RunReplay(const std::vector<std::string>& args, std::ostream& out,
              std::ostream& err) {
  FlagSet flags(kCommand);
  std::optional<std::string> sweep_path, stack, failed_as, db, plot;
  std::vector<std::string> strategies;
  std::optional<int64_t> seed, max_trials, first_rung, eta, steps, warmup,
      curve;
  std::optional<double> noise, stop_margin;
  bool trials = false;
  bool without_collectives = false;
  OutputFlags output;
  flags.AddString("sweep", "FILE", "the measured sweep to replay", &sweep_path);
  flags.AddStrings("strategy", "NAME",
                   "study, study-history, model-order, random, naive "
                   "(repeatable; default: all but study-history)",
                   &strategies);
  flags.AddSection("the sweep");
  flags.AddString("stack", "NAME",
                  "the training stack of rows that name none", &stack);
  flags.AddString("failed-as", "oom|crash",
                  "what a sweep's 'failed' row reports (default oom: the "
                  "sweeps say most failures are memory)",
                  &failed_as);
  flags.AddSwitch("without-collectives",
                  "plan without the sweep's measured collectives (the GPU "
                  "preset's links, as a user who measured none)",
                  &without_collectives);
  flags.AddSection("the trials");
  flags.AddInt("seed", "N", "the noise's seed (default 1)", &seed);
  flags.AddDouble("noise", "SD",
                  "run-to-run noise of a trial's step time, log-space sd "
                  "(default 0.02)",
                  &noise);
  flags.AddInt("max-trials", "N", "study.trials.max_trials", &max_trials);
  flags.AddInt("first-rung", "N", "study.trials.first_rung", &first_rung);
  flags.AddInt("eta", "N", "study.trials.eta", &eta);
  flags.AddInt("steps", "N", "study.trials.steps", &steps);
  flags.AddInt("warmup-steps", "N", "study.trials.warmup_steps", &warmup);
  flags.AddDouble("stop-margin", "FRACTION", "study.trials.stop_margin",
                  &stop_margin);
  flags.AddSection("output");
  output.Register(&flags);
  flags.AddInt("curve", "K", "regret_after's length (default 20)", &curve);
  flags.AddSwitch("trials", "list every replayed study's trials", &trials);
  flags.AddString("plot", "FILE", "write the regret curves as SVG", &plot);
  flags.AddString("db", "FILE",
                  "keep study-history's planner store here (tessera studies "
                  "--db reads it)",
                  &db);
  flags.AddRequirement([](const auto& given) {
    std::vector<std::string> missing;
    if (!given("sweep")) missing.push_back("--sweep: required");
    return missing;
  });
  if (FlagSet::WantsHelp(args)) {
    out << kAbout << "\n" << flags.Help() << "\n" << kExitStatusHelp;
    return kExitOk;
  }
  if (absl::Status s = flags.Parse(args); !s.ok()) {
    return ReportError(err, kCommand, s);
  }
  if (output.format() == OutputFormat::kCsv) {
    return ReportError(err, kCommand,
                       absl::InvalidArgumentError(
                           "--output: csv is not offered; table, wide or json"));
  }
  absl::StatusOr<TrialStatus> failed = FailedAs(failed_as);
  if (!failed.ok()) return ReportError(err, kCommand, failed.status());
  if (seed && *seed < 0) {
    return ReportError(err, kCommand,
                       absl::InvalidArgumentError("--seed: must be >= 0"));
  }
  if (curve && (*curve < 1 || *curve > 10000)) {
    return ReportError(err, kCommand,
                       absl::InvalidArgumentError(
                           "--curve: must be in [1, 10000]"));
  }
  replay::SweepReadOptions read;
  read.stack = stack.value_or("");
  read.failed_as = *failed;
  read.without_collectives = without_collectives;
  absl::StatusOr<replay::MeasuredSweep> sweep =
      replay::ReadMeasuredSweep(*sweep_path, read);
  if (!sweep.ok()) return ReportError(err, kCommand, sweep.status());
  if (sweep->groups.empty()) {
    return ReportError(
        err, kCommand,
        absl::InvalidArgumentError(absl::StrCat(
            "--sweep: ", *sweep_path, ": no group of 2 or more measured "
            "layouts",
            sweep->skipped.empty() ? "" : " (", 
            sweep->skipped.empty() ? "" : sweep->skipped.front(),
            sweep->skipped.empty() ? "" : ")")));
  }

  replay::SweepReplayOptions options;
  options.strategies = strategies;
  options.study.seed = static_cast<uint64_t>(seed.value_or(1));
  options.study.noise_log_sd = noise.value_or(0.02);
  v1::TrialOptions& t = options.study.trials;
  if (max_trials) t.set_max_trials(*max_trials);
  if (first_rung) t.set_first_rung(*first_rung);
  if (eta) t.set_eta(*eta);
  if (steps) t.set_steps(*steps);
  if (warmup) t.set_warmup_steps(*warmup);
  if (stop_margin) t.set_stop_margin(*stop_margin);
  options.curve_length = curve.value_or(20);
  options.db_path = db.value_or("");

  absl::StatusOr<replay::SweepReplayReport> report =
      replay::ReplaySweep(*sweep, options);
  if (!report.ok()) return ReportError(err, kCommand, report.status());
  if (plot) {
    std::ofstream file(*plot);
    file << ReplayRegretSvg(*report);
    if (!file) {
      return ReportError(err, kCommand,
                         absl::InvalidArgumentError(absl::StrCat(
                             "--plot: ", *plot, ": cannot be written")));
    }
  }
  if (output.format() == OutputFormat::kJson) {
    out << ReplayReportJson(*report).dump(2) << "\n";
  } else {
    PrintReplayReport(*report, output.table_width(), trials, out);
  }
  return kExitOk;
}

}  // namespace tessera::cli
