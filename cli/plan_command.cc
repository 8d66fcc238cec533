#include "cli/plan_command.h"

#include <cstdint>
#include <optional>

#include "absl/strings/str_cat.h"
#include "cli/exit_codes.h"
#include "core/flags.h"
#include "cli/plan_output.h"
#include "cli/workload_flags.h"
#include "planner/calibration.h"
#include "planner/search.h"
#include "proto/convert.h"

namespace tessera::cli {
namespace {

constexpr char kCommand[] = "tessera plan";

constexpr char kAbout[] =
    "Usage: tessera plan (--spec FILE | workload flags) [--top N] [--json]\n"
    "\n"
    "Ranks every feasible parallel layout (tp, sp, pp, vpp, cp, dp, ZeRO\n"
    "stage, HSDP shard group, micro-batch, recompute) of the workload with\n"
    "the cost model's default calibration, offline: no service, no GPU.\n"
    "Prints the top layouts by tokens/s, the best-throughput and best-energy\n"
    "layouts with the full run's days, MWh and GPU-hours (with\n"
    "--total-tokens), and the Pareto front of tokens/s against tokens/J.\n"
    "\n"
    "Example:\n"
    "  tessera plan --model llama2-7b --gpu h100-sxm --nodes 32 \\\n"
    "      --gpus-per-node 8 --global-batch 512 --seq-len 4096 \\\n"
    "      --total-tokens 1e12\n"
    "  tessera plan --spec deploy/examples/study.json --json\n";

}  // namespace

int RunPlan(const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err) {
  FlagSet flags(kCommand);
  WorkloadFlags workload_flags;
  workload_flags.Register(&flags);
  std::optional<int64_t> top;
  bool json = false;
  flags.AddSection("Output");
  flags.AddInt("top", "N",
               "layouts listed, best tokens/s first (default 10; 0: all "
               "feasible)",
               &top);
  flags.AddSwitch("json", "print one JSON object instead of the table", &json);
  if (FlagSet::WantsHelp(args)) {
    out << kAbout << flags.Help() << "\n" << kExitStatusHelp;
    return kExitOk;
  }
  if (absl::Status s = flags.Parse(args); !s.ok()) {
    return ReportError(err, kCommand, s);
  }
  absl::StatusOr<Study> study = workload_flags.Resolve();
  if (!study.ok()) return ReportError(err, kCommand, study.status());
  if (top.has_value()) study->spec.mutable_search()->set_top(*top);
  absl::StatusOr<planner::SearchOptions> options =
      SearchOptionsFromSpec(study->spec.search());
  if (!options.ok()) {
    absl::Status s = options.status();
    if (top.has_value()) {
      s = absl::InvalidArgumentError(absl::StrCat(s.message(), " (--top)"));
    } else if (workload_flags.spec_path.has_value()) {
      s = absl::InvalidArgumentError(
          absl::StrCat("spec: ", *workload_flags.spec_path, ": ", s.message()));
    }
    return ReportError(err, kCommand, s);
  }
  absl::StatusOr<planner::SearchResult> result =
      planner::SearchLayouts(study->workload, planner::Calibration{}, *options);
  if (!result.ok()) return ReportError(err, kCommand, result.status());
  if (json) {
    out << DumpJson(PlanJson(*result)) << "\n";
  } else {
    PrintPlan(study->workload, *result, out);
  }
  return result->feasible > 0 ? kExitOk : kExitNoFeasible;
}

}  // namespace tessera::cli
