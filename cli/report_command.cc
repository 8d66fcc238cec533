#include "cli/report_command.h"

#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli/exit_codes.h"
#include "cli/planner_client.h"
#include "cli/report_html.h"
#include "cli/report_predictions.h"
#include "cli/study_source.h"
#include "core/file_io.h"
#include "core/flags.h"

namespace tessera::cli {
namespace {

constexpr char kCommand[] = "tessera report";

constexpr char kAbout[] =
    "Usage: tessera report ID [--out FILE]\n"
    "\n"
    "Writes study ID as one self-contained HTML page (no script, nothing\n"
    "fetched): the study, the best-throughput and best-energy layouts with\n"
    "each number labelled MEASURED or PREDICTED and the full run's days, MWh\n"
    "and GPU-hours; plots (inline SVG) of the Pareto front of tokens/s\n"
    "against tokens/J, each trial's error against its prediction, the loss\n"
    "and step time per step, each step's breakdown measured beside\n"
    "predicted and the trials' timeline per agent; every trial, the\n"
    "calibration and the spec. The file is written whole or not at all.\n"
    "\n"
    "Example:\n"
    "  tessera report 7 --out study-7.html\n";

}  // namespace

int RunReport(const std::vector<std::string>& args, std::ostream& out,
              std::ostream& err) {
  FlagSet flags(kCommand);
  std::optional<std::string> out_path;
  flags.AddString("out", "FILE",
                  "where the page goes (default tessera-study-ID.html; - for "
                  "standard output)",
                  &out_path);
  StudySourceFlags source;
  source.Register(&flags);
  if (FlagSet::WantsHelp(args)) {
    out << kAbout << flags.Help() << "\n" << kServiceExitStatusHelp;
    return kExitOk;
  }
  absl::StatusOr<int64_t> id =
      ParseStudyArgs(args, {}, "tessera report ID", flags, source);
  if (!id.ok()) return ReportError(err, kCommand, id.status());

  absl::StatusOr<std::unique_ptr<StudySource>> client = source.Open();
  if (!client.ok()) return ReportError(err, kCommand, client.status());
  StudyReport report;
  report.generated = absl::Now();
  absl::StatusOr<v1::GetStudyResponse> study = (*client)->GetStudy(*id);
  if (!study.ok()) return ReportError(err, kCommand, study.status());
  report.study = *std::move(study);
  absl::StatusOr<v1::Recommendation> recommendation =
      (*client)->GetRecommendation(*id);
  if (!recommendation.ok()) {
    return ReportError(err, kCommand, recommendation.status());
  }
  report.recommendation = *std::move(recommendation);
  v1::ListTrialsRequest request;
  request.set_study_id(*id);
  request.set_sort("id");
  request.set_limit(1'000'000);
  absl::StatusOr<v1::ListTrialsResponse> trials =
      (*client)->ListTrials(request);
  if (!trials.ok()) return ReportError(err, kCommand, trials.status());
  report.trials.assign(trials->trials().begin(), trials->trials().end());
  report.breakdowns =
      PredictTrialBreakdowns(report.trials, report.recommendation);

  const std::string html = RenderStudyReportHtml(report);
  const std::string path =
      out_path.value_or(absl::StrCat("tessera-study-", *id, ".html"));
  if (path == "-") {
    out << html;
    return kExitOk;
  }
  if (absl::Status s = WriteFileAtomically(path, html); !s.ok()) {
    return ReportError(err, kCommand, OutPathError(path, s));
  }
  out << "wrote " << path << " (study " << *id << ", " << report.trials.size()
      << " trials)\n";
  return kExitOk;
}

}  // namespace tessera::cli
