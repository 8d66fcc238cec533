#include "cli/history_command.h"

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli/exit_codes.h"
#include "cli/output_format.h"
#include "cli/plan_output.h"
#include "cli/planner_client.h"
#include "cli/study_source.h"
#include "cli/trial_filters.h"
#include "cli/trial_history.h"
#include "core/flags.h"

namespace tessera::cli {
namespace {

constexpr char kCommand[] = "tessera history";
constexpr int64_t kDefaultLimit = 10000;

constexpr char kAbout[] =
    "Usage: tessera history [filters] [--limit N] [-o table|wide|json|csv]\n"
    "\n"
    "Everything the trials of every study measured, grouped by what they\n"
    "ran: one row per model, GPU, GPU count and layout, with its trials (ok\n"
    "and failed), the best tokens/s and the trial that reached it, the\n"
    "median tokens/s, the best MFU, the median watts per GPU, the best\n"
    "tokens/J, the studies it ran in and when it last ran; best tokens/s\n"
    "first. — marks what no ok trial measured (empty in CSV, null in\n"
    "JSON). The table fits 100 columns; -o wide shows every column.\n"
    "\n"
    "States: queued, running, ok, oom, nan, timeout, crash, invalid,\n"
    "cancelled; failed is oom, nan, timeout, crash and invalid; done is ok\n"
    "and every failure. Times: RFC 3339 (2024-05-01T12:00:00Z), a date\n"
    "(2024-05-01, midnight UTC), or a span back from now (90s, 30m, 2h,\n"
    "7d, 2w).\n"
    "\n"
    "Examples:\n"
    "  tessera history --model llama2-7b --gpu h100-sxm\n"
    "  tessera history --tp 8 --since 30d    # 8-way TP, the last 30 days\n";

}  // namespace

int RunHistory(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err) {
  FlagSet flags(kCommand);
  TrialFilterFlags filters;
  filters.Register(&flags);
  std::optional<int64_t> limit;
  OutputFlags output;
  flags.AddSection("Output");
  flags.AddInt("limit", "N",
               absl::StrCat("read at most N trials, newest first (default ",
                            kDefaultLimit, ")"),
               &limit);
  output.Register(&flags, /*csv_switch=*/true);
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
  if (limit.has_value() && *limit < 1) {
    return ReportError(err, kCommand,
                       absl::InvalidArgumentError(absl::StrCat(
                           "--limit: must be at least 1, got ", *limit)));
  }
  v1::ListTrialsRequest request;
  request.set_study_id(0);  // every study
  if (absl::Status s = filters.Apply(absl::Now(), &request); !s.ok()) {
    return ReportError(err, kCommand, s);
  }
  request.set_sort("-created");
  request.set_limit(limit.value_or(kDefaultLimit));
  absl::StatusOr<std::unique_ptr<StudySource>> client = source.Open();
  if (!client.ok()) return ReportError(err, kCommand, client.status());
  absl::StatusOr<v1::ListTrialsResponse> trials = (*client)->ListTrials(request);
  if (!trials.ok()) return ReportError(err, kCommand, trials.status());
  const std::vector<LayoutHistory> groups = GroupByLayout(trials->trials());
  if (output.format() == OutputFormat::kJson) {
    out << DumpJson(HistoryJson(groups)) << "\n";
  } else if (output.format() == OutputFormat::kCsv) {
    PrintHistoryCsv(groups, out);
  } else {
    PrintHistoryTable(groups, out, output.table_width());
  }
  return kExitOk;
}

}  // namespace tessera::cli
