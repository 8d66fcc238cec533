#include "cli/best_command.h"

#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "cli/exit_codes.h"
#include "cli/output_format.h"
#include "cli/export_flag.h"
#include "cli/plan_output.h"
#include "cli/planner_client.h"
#include "cli/recommendation_output.h"
#include "cli/service_json.h"
#include "cli/study_source.h"
#include "core/flags.h"
#include "service/study_queries.h"
#include "proto/convert.h"

namespace tessera::cli {
namespace {

constexpr char kCommand[] = "tessera best";

constexpr char kAbout[] =
    "Usage: tessera best ID [--objective throughput|energy]\n"
    "                       [-o table|wide|json|csv]\n"
    "                       [--export TARGET [--out FILE]]\n"
    "\n"
    "Prints the layout study ID recommends: the highest tokens/s\n"
    "(--objective throughput, the default) or the most tokens per joule\n"
    "(--objective energy), with its tokens/s, step time, MFU, memory per\n"
    "GPU, exposed communication and bubble, each labelled MEASURED (a trial\n"
    "ran it) or PREDICTED (the calibrated cost model), the full run's days,\n"
    "MWh and GPU-hours, why it wins, and the calibration's fit. While the\n"
    "study runs, the recommendation is provisional and says so.\n"
    "\n"
    "JSON: {\"study_id\", \"objective\", \"final\", \"recommended\": R,\n"
    "\"calibration_mape\", \"calibration_samples\", \"history_db\"} with R\n"
    "as `tessera watch`'s recommendation prints its layouts.\n"
    "\n"
    "--export TARGET writes the recommended layout as that framework's\n"
    "configuration for the study's workload (see `tessera plan --help`).\n"
    "\n"
    "Examples:\n"
    "  tessera best 7 --objective energy\n"
    "  tessera best 7 --export torchtitan --out llama_layout.py\n";

}  // namespace

int RunBest(const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err) {
  FlagSet flags(kCommand);
  std::optional<std::string> objective;
  OutputFlags output;
  flags.AddString("objective", "throughput|energy",
                  "what the layout is best at (default throughput)",
                  &objective);
  output.Register(&flags);
  ExportFlags exports;
  exports.Register(&flags);
  StudySourceFlags source;
  source.Register(&flags);
  if (FlagSet::WantsHelp(args)) {
    out << kAbout << flags.Help() << "\n" << kServiceExitStatusHelp;
    return kExitOk;
  }
  absl::StatusOr<int64_t> id =
      ParseStudyArgs(args, {"json"}, "tessera best ID", flags, source);
  if (!id.ok()) return ReportError(err, kCommand, id.status());
  const std::string goal = objective.value_or("throughput");
  if (goal != "throughput" && goal != "energy") {
    return ReportError(err, kCommand,
                       absl::InvalidArgumentError(absl::StrCat(
                           "--objective: '", goal,
                           "' is not an objective (throughput or energy)")));
  }
  if (absl::Status s = exports.Validate(); !s.ok()) {
    return ReportError(err, kCommand, s);
  }
  absl::StatusOr<std::unique_ptr<StudySource>> client = source.Open();
  if (!client.ok()) return ReportError(err, kCommand, client.status());
  absl::StatusOr<v1::Recommendation> r = (*client)->GetRecommendation(*id);
  if (!r.ok()) return ReportError(err, kCommand, r.status());
  const bool energy = goal == "energy";
  const bool has = energy ? r->has_best_energy() : r->has_best_throughput();
  const v1::RecommendedLayout& best =
      energy ? r->best_energy() : r->best_throughput();
  if (exports.requested()) {
    if (!has) {
      return ReportError(err, kCommand,
                         absl::FailedPreconditionError(absl::StrCat(
                             "--export: study ", *id,
                             " has no recommended layout yet (tessera watch ",
                             *id, " follows it)")));
    }
    absl::StatusOr<v1::GetStudyResponse> study = (*client)->GetStudy(*id);
    if (!study.ok()) return ReportError(err, kCommand, study.status());
    absl::StatusOr<Workload> workload =
        service::StudyWorkload(study->spec(), *r);
    absl::StatusOr<Layout> layout = LayoutFromProto(best.layout());
    absl::Status s = !workload.ok() ? workload.status() : layout.status();
    if (s.ok()) {
      const std::optional<exporters::ExportTarget> own =
          exporters::ExportTargetOfStack(workload->training.stack);
      s = exports.CheckStack(
          *workload, absl::StrCat("study ", *id, "'s recommended layout"),
          absl::StrCat(
              own.has_value()
                  ? absl::StrCat("export it with --export ",
                                 exporters::ExportTargetName(*own), ", or rank")
                  : "rank",
              " for ", exports.TargetStack(),
              " with tessera plan --spec FILE --stack ", exports.TargetStack(),
              " --export ", *exports.target));
    }
    if (s.ok()) s = exports.Write(*workload, *layout, out, err);
    if (!s.ok()) return ReportError(err, kCommand, s);
    if (!exports.to_file()) return kExitOk;
  }
  if (output.format() == OutputFormat::kCsv) {
    PrintRecommendedLayoutCsv(*r, goal, has ? &best : nullptr, out);
    return kExitOk;
  }
  if (output.format() == OutputFormat::kJson) {
    out << DumpJson(
               nlohmann::json{{"study_id", r->study_id()},
                              {"objective", goal},
                              {"final", r->final()},
                              {"recommended", has ? RecommendedLayoutJson(best)
                                                  : nlohmann::json(nullptr)},
                              {"calibration_mape", r->calibration_mape()},
                              {"calibration_samples", r->calibration_samples()},
                              {"history_db", r->history_db()}})
        << "\n";
    return kExitOk;
  }
  out << "study " << *id
      << (r->final() ? "" : " (provisional: the study is still running)")
      << "\n";
  if (has) {
    PrintRecommendedLayout(
        energy ? "best energy (tokens/J)" : "best throughput (tokens/s)", best,
        out);
  } else {
    out << "no recommendation yet\n";
  }
  out << CalibrationLine(*r) << "\n";
  if (!r->history_db().empty()) out << "history: " << r->history_db() << "\n";
  return kExitOk;
}

}  // namespace tessera::cli
