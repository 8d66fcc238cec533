#include "cli/trials_command.h"

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli/exit_codes.h"
#include "cli/output_format.h"
#include "cli/plan_output.h"
#include "cli/planner_client.h"
#include "cli/service_json.h"
#include "cli/study_source.h"
#include "cli/trial_filters.h"
#include "cli/trial_table.h"
#include "core/flags.h"

namespace tessera::cli {
namespace {

constexpr char kCommand[] = "tessera trials";

constexpr char kAbout[] =
    "Usage: tessera trials [--study ID] [filters] [--sort KEY] [--limit N]\n"
    "                      [-o table|wide|json|csv]\n"
    "\n"
    "Lists trials, of one study or of every study, with what each measured:\n"
    "id, study, rung, state, layout, steps, tokens/s, MFU, peak memory per\n"
    "GPU, exposed communication per step, watts per GPU (— when power was\n"
    "not measured), the cost model's predicted tokens/s, and the reason of\n"
    "a failure. The table fits 100 columns (-o wide: every column); -o\n"
    "json and -o csv keep every number and the whole reason.\n"
    "\n"
    "States: queued, running, ok, oom, nan, timeout, crash, invalid,\n"
    "cancelled; failed is oom, nan, timeout, crash and invalid; done is ok\n"
    "and every failure. Times: RFC 3339 (2024-05-01T12:00:00Z), a date\n"
    "(2024-05-01, midnight UTC), or a span back from now (90s, 30m, 2h,\n"
    "7d, 2w).\n"
    "\n"
    "Sort keys (the planner's): id (the default), created, finished, rung,\n"
    "attempts, tokens_per_s, tokens_per_s_per_gpu, tokens_per_joule,\n"
    "step_time_s, tflops_per_gpu, mfu, peak_memory_bytes, watts_per_gpu,\n"
    "exposed_comm_s, predicted_tokens_per_s, ...; -KEY sorts descending.\n"
    "Trials without the value come last.\n"
    "\n"
    "Examples:\n"
    "  tessera trials --study 7 --sort -tokens_per_s\n"
    "  tessera trials --state failed --since 2d\n"
    "  tessera trials --tp 8 --gpu h100-sxm --since 2024-05-01 -o csv\n";

absl::Status FlagError(absl::string_view flag, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", message));
}

}  // namespace

int RunTrials(const std::vector<std::string>& args, std::ostream& out,
              std::ostream& err) {
  FlagSet flags(kCommand);
  std::optional<int64_t> study, limit;
  std::optional<std::string> sort;
  OutputFlags output;
  flags.AddSection("Study");
  flags.AddInt("study", "ID", "trials of this study only (default: all)",
               &study);
  TrialFilterFlags filters;
  filters.Register(&flags);
  flags.AddSection("Output");
  flags.AddString("sort", "KEY",
                  "order by tokens_per_s, mfu, created, ... (-KEY: "
                  "descending)",
                  &sort);
  flags.AddInt("limit", "N", "at most N trials (default 1000)", &limit);
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
  v1::ListTrialsRequest request;
  if (study.has_value()) {
    if (*study < 1) {
      return ReportError(
          err, kCommand,
          FlagError("study", absl::StrCat("must be a study id (a positive "
                                          "integer), got ",
                                          *study)));
    }
    request.set_study_id(*study);
  }
  if (absl::Status s = filters.Apply(absl::Now(), &request); !s.ok()) {
    return ReportError(err, kCommand, s);
  }
  if (sort.has_value()) request.set_sort(*sort);
  if (limit.has_value()) {
    if (*limit < 1) {
      return ReportError(
          err, kCommand,
          FlagError("limit", absl::StrCat("must be at least 1, got ", *limit)));
    }
    request.set_limit(*limit);
  }
  absl::StatusOr<std::unique_ptr<StudySource>> client = source.Open();
  if (!client.ok()) return ReportError(err, kCommand, client.status());
  absl::StatusOr<v1::ListTrialsResponse> trials = (*client)->ListTrials(request);
  if (!trials.ok()) return ReportError(err, kCommand, trials.status());
  if (output.format() == OutputFormat::kJson) {
    nlohmann::json all = nlohmann::json::array();
    for (const v1::Trial& t : trials->trials()) all.push_back(TrialJson(t));
    out << DumpJson(all) << "\n";
  } else if (output.format() == OutputFormat::kCsv) {
    PrintTrialCsv(trials->trials(), out);
  } else {
    PrintTrialTable(trials->trials(), out, output.table_width());
  }
  return kExitOk;
}

}  // namespace tessera::cli
