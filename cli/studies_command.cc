#include "cli/studies_command.h"

#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/exit_codes.h"
#include "cli/output_format.h"
#include "cli/plan_output.h"
#include "cli/planner_client.h"
#include "cli/service_json.h"
#include "cli/service_names.h"
#include "cli/study_source.h"
#include "cli/text_table.h"
#include "cli/time_text.h"
#include "cli/trial_table.h"
#include "core/flags.h"

namespace tessera::cli {
namespace {

constexpr char kCommand[] = "tessera studies";

constexpr char kAbout[] =
    "Usage: tessera studies [--state S] [--model M] [--gpu G] [--limit N]\n"
    "                       [-o table|wide|json|csv]\n"
    "\n"
    "Lists the planner's studies, newest first: id, name, state, model, GPU,\n"
    "GPUs, trials done of total and running, the best tokens/s measured so\n"
    "far and its layout, the last update, and why a study ended when it\n"
    "failed or was cancelled.\n"
    "\n"
    "Example:\n"
    "  tessera studies --state running\n";

}  // namespace

void PrintStudyTable(const v1::ListStudiesResponse& studies, std::ostream& out,
                     size_t max_width) {
  // Too wide for max_width: the name and reason are cut and the best layout
  // wrapped first, then the running count, update time, model and GPU go, in
  // that order. With max_width 0 (-o wide) nothing is cut.
  TextTable table(
      {TableColumn("id", kRight), TableColumn("name").Cut(12),
       TableColumn("state"), TableColumn("model").Drop(3),
       TableColumn("gpu").Drop(4), TableColumn("GPUs", kRight),
       TableColumn("trials", kRight), TableColumn("running", kRight).Drop(1),
       TableColumn("best tokens/s", kRight).Short("tokens/s"),
       TableColumn("best layout").Wrap(24), TableColumn("updated").Drop(2),
       TableColumn("reason").Cut(12)});
  for (const v1::StudySummary& s : studies.studies()) {
    const bool best = s.has_best_layout() && s.best_tokens_per_s() > 0;
    table.AddRow({
        absl::StrCat(s.id()),
        max_width > 0 ? Truncate(s.name(), 32) : s.name(),
        std::string(StudyStateName(s.state())),
        s.model(),
        s.gpu(),
        absl::StrCat(s.nodes() * s.gpus_per_node()),
        absl::StrCat(s.trials_done(), "/", s.trials_total()),
        absl::StrCat(s.trials_running()),
        best ? absl::StrFormat("%.0f", s.best_tokens_per_s()) : kNotMeasured,
        best ? CompactLayout(s.best_layout()) : "",
        FormatUnixMs(s.updated_unix_ms()),
        max_width > 0 ? Truncate(s.state_reason(), kReasonWidth)
                      : s.state_reason(),
    });
  }
  table.Print(out, max_width);
}

void PrintStudyCsv(const v1::ListStudiesResponse& studies, std::ostream& out) {
  out << CsvLine({"id", "name", "state", "model", "gpu", "gpus", "trials_done",
                  "trials_total", "trials_running", "best_tokens_per_s",
                  "best_layout", "updated", "reason"});
  for (const v1::StudySummary& s : studies.studies()) {
    const bool best = s.has_best_layout() && s.best_tokens_per_s() > 0;
    out << CsvLine({
        absl::StrCat(s.id()),
        s.name(),
        std::string(StudyStateName(s.state())),
        s.model(),
        s.gpu(),
        absl::StrCat(s.nodes() * s.gpus_per_node()),
        absl::StrCat(s.trials_done()),
        absl::StrCat(s.trials_total()),
        absl::StrCat(s.trials_running()),
        CsvNumber(best ? std::optional<double>(s.best_tokens_per_s())
                       : std::nullopt),
        best ? CompactLayout(s.best_layout()) : "",
        FormatUnixMs(s.updated_unix_ms()),
        s.state_reason(),
    });
  }
}

int RunStudies(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err) {
  FlagSet flags(kCommand);
  std::optional<std::string> state, model, gpu;
  std::optional<int64_t> limit;
  OutputFlags output;
  flags.AddSection("Filters");
  flags.AddString("state", "S", "queued, running, done, cancelled or failed",
                  &state);
  flags.AddString("model", "M", "model preset (or custom)", &model);
  flags.AddString("gpu", "G", "GPU (h100-sxm, ...)", &gpu);
  flags.AddInt("limit", "N", "at most N studies (default: the planner's, 100)",
               &limit);
  flags.AddSection("Output");
  output.Register(&flags);
  StudySourceFlags source;
  source.Register(&flags);
  if (FlagSet::WantsHelp(args)) {
    out << kAbout << flags.Help() << "\n" << kServiceExitStatusHelp;
    return kExitOk;
  }
  if (absl::Status s = flags.Parse(args); !s.ok()) {
    return ReportError(err, kCommand, s);
  }
  if (absl::Status s = source.Validate(); !s.ok()) {
    return ReportError(err, kCommand, s);
  }
  v1::ListStudiesRequest request;
  if (state.has_value()) {
    absl::StatusOr<v1::StudyState> parsed = ParseStudyState(*state);
    if (!parsed.ok()) {
      return ReportError(err, kCommand,
                         absl::InvalidArgumentError(absl::StrCat(
                             "--state: ", parsed.status().message())));
    }
    request.set_state(*parsed);
  }
  if (model.has_value()) request.set_model(*model);
  if (gpu.has_value()) request.set_gpu(*gpu);
  if (limit.has_value()) {
    if (*limit < 1) {
      return ReportError(err, kCommand,
                         absl::InvalidArgumentError(absl::StrCat(
                             "--limit: must be at least 1, got ", *limit)));
    }
    request.set_limit(*limit);
  }
  absl::StatusOr<std::unique_ptr<StudySource>> client = source.Open();
  if (!client.ok()) return ReportError(err, kCommand, client.status());
  absl::StatusOr<v1::ListStudiesResponse> studies = (*client)->ListStudies(request);
  if (!studies.ok()) return ReportError(err, kCommand, studies.status());
  if (output.format() == OutputFormat::kJson) {
    nlohmann::json all = nlohmann::json::array();
    for (const v1::StudySummary& s : studies->studies()) {
      all.push_back(StudyJson(s));
    }
    out << DumpJson(all) << "\n";
  } else if (output.format() == OutputFormat::kCsv) {
    PrintStudyCsv(*studies, out);
  } else {
    PrintStudyTable(*studies, out, output.table_width());
  }
  return kExitOk;
}

}  // namespace tessera::cli
