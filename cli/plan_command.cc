#include "cli/plan_command.h"

#include <cstdint>
#include <optional>

#include "absl/strings/str_cat.h"
#include "cli/calibration_flag.h"
#include "cli/exit_codes.h"
#include "cli/export_flag.h"
#include "cli/output_format.h"
#include "cli/plan_output.h"
#include "cli/planner_client.h"
#include "cli/workload_flags.h"
#include "core/flags.h"
#include "core/layout.h"
#include "core/status_macros.h"
#include "planner/calibration/calibration.h"
#include "planner/search/search.h"
#include "planner/stacks/stack_calibration.h"
#include "proto/convert.h"

namespace tessera::cli {
namespace {

constexpr char kCommand[] = "tessera plan";

constexpr char kAbout[] =
    "Usage: tessera plan (--spec FILE | workload flags) [--top N]\n"
    "                    [-o table|wide|json|csv]\n"
    "                    [--export TARGET [--out FILE]]\n"
    "\n"
    "Ranks every feasible parallel layout (tp, sp, pp, vpp, cp, dp, ZeRO\n"
    "stage, HSDP shard group, micro-batch, recompute) of the workload with\n"
    "the cost model's default calibration, offline: no service, no GPU.\n"
    "Prints the top layouts by tokens/s, the best-throughput and best-energy\n"
    "layouts with the full run's days, MWh and GPU-hours (with\n"
    "--total-tokens), and the Pareto front of tokens/s against tokens/J.\n"
    "With --planner HOST:PORT the planner service ranks them instead, with\n"
    "its current calibration, and the output is the same (exit 1 when the\n"
    "planner cannot be reached).\n"
    "--export torchtitan|megatron|deepspeed|nemo prints the best layout as\n"
    "that framework's configuration; --out FILE writes it there.\n"
    "\n"
    "Example:\n"
    "  tessera plan --model llama2-7b --gpu h100-sxm --nodes 32 \\\n"
    "      --gpus-per-node 8 --global-batch 512 --seq-len 4096 \\\n"
    "      --total-tokens 1e12\n"
    "  tessera plan --spec deploy/examples/study.json --json\n"
    "  tessera plan --spec deploy/examples/study.json --planner "
    "127.0.0.1:50051\n";

// The planner service's ranking of `spec` (its current calibration), as a
// local search returns it, and how sure the service is of it.
absl::StatusOr<planner::SearchResult> PlanOnService(
    const PlannerFlags& planner, const v1::StudySpec& spec,
    std::optional<PlanUncertainty>* uncertainty) {
  PlannerClient client(*planner.planner, planner.Timeout(),
                       planner.Credentials());
  v1::PlanRequest request;
  *request.mutable_study() = spec;
  absl::StatusOr<v1::PlanResponse> response = client.Plan(request);
  if (!response.ok()) return response.status();
  absl::StatusOr<planner::SearchResult> result =
      SearchResultFromPlanResponse(*response);
  const v1::PlanUncertainty& u = response->uncertainty();
  const int n = response->candidates_size();
  if (result.ok() && response->has_uncertainty() &&
      (u.candidates_size() != n || u.within_error_of_best_size() != n)) {
    result = absl::InvalidArgumentError(absl::StrCat(
        "uncertainty for ", u.candidates_size(), " of ", n, " candidates"));
  }
  if (!result.ok()) {
    return absl::InternalError(absl::StrCat(
        "the planner at ", client.address(),
        " answered a malformed plan: ", result.status().message()));
  }
  if (response->has_uncertainty()) {
    *uncertainty = PlanUncertaintyFromProto(u);
  }
  return result;
}

// The search of `study` with its calibration, on the service or here.
absl::StatusOr<planner::SearchResult> Rank(
    const Study& study, const std::optional<std::string>& calibration_path,
    const PlannerFlags& planner, const planner::SearchOptions& options,
    std::ostream& err, std::optional<PlanUncertainty>* uncertainty) {
  const bool on_service = planner.planner.has_value();
  TESSERA_ASSIGN_OR_RETURN(
      CommandCalibration calibration,
      CalibrationForCommand(study.workload, calibration_path, on_service, err));
  if (on_service) return PlanOnService(planner, study.spec, uncertainty);
  TESSERA_ASSIGN_OR_RETURN(
      planner::SearchResult result,
      planner::SearchLayouts(study.workload, calibration.calibration, options));
  *uncertainty = planner::AssessPlan(
      study.workload, result, calibration.calibration, calibration.uncertainty);
  return result;
}

// --export of a plan: the best candidate the target can write, ranked for
// the target's stack. When the plan's stack is another, the workload is
// ranked again with the target's stack (its default options) and a note
// says so; when the best layouts cannot be written in the target's
// configuration (a DeepSpeed JSON has no pipeline), the best that can is
// exported and a note names what was passed over.
absl::Status ExportBest(const Study& study, const planner::SearchResult& plan,
                        const std::optional<std::string>& calibration_path,
                        const PlannerFlags& planner,
                        const planner::SearchOptions& options,
                        const ExportFlags& exports, std::ostream& out,
                        std::ostream& err) {
  const std::string target(planner::ExportTargetName(exports.Target()));
  const Study* ranked_study = &study;
  const planner::SearchResult* ranked = &plan;
  Study restacked;
  planner::SearchResult reranked;
  if (exports.OtherStack(study.workload)) {
    restacked.spec = study.spec;
    restacked.spec.mutable_training()->set_stack(exports.TargetStack());
    restacked.spec.mutable_training()->clear_stack_options();
    absl::StatusOr<Workload> w = WorkloadFromSpec(restacked.spec);
    if (!w.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--export ", target, ": the workload on the ",
                       exports.TargetStack(), " stack (which ", target,
                       " runs): ", w.status().message(), "; use --stack ",
                       study.workload.training.stack, "'s own target, if any"));
    }
    restacked.workload = *std::move(w);
    std::optional<PlanUncertainty> ignored;
    TESSERA_ASSIGN_OR_RETURN(reranked, Rank(restacked, calibration_path,
                                            planner, options, err, &ignored));
    err << "note: --export " << target << " runs the " << exports.TargetStack()
        << " stack, not " << study.workload.training.stack
        << ": ranked again for " << exports.TargetStack()
        << " with its default options and exported its best layout (its "
           "table: add --stack "
        << exports.TargetStack() << ")\n";
    ranked_study = &restacked;
    ranked = &reranked;
  }
  if (ranked->candidates.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--export: no layout of the ", ranked_study->workload.training.stack,
        " stack is feasible for this workload; nothing to export"));
  }
  // The best candidate the target's configuration can say.
  absl::Status first_refusal;
  for (size_t i = 0; i < ranked->candidates.size(); ++i) {
    const Layout& layout = ranked->candidates[i].layout;
    absl::StatusOr<planner::LayoutExport> e =
        exports.Export(ranked_study->workload, layout);
    if (!e.ok()) {
      if (e.status().code() != absl::StatusCode::kInvalidArgument) {
        return e.status();
      }
      if (first_refusal.ok()) first_refusal = e.status();
      continue;
    }
    if (i > 0) {
      err << "note: --export " << target << ": rank 1 to " << i
          << " cannot be written as " << target << "'s configuration ("
          << first_refusal.message() << "); exported rank " << i + 1 << ", "
          << FormatLayout(layout) << "\n";
    }
    return exports.Write(*e, out, err);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      first_refusal.message(), "; none of the ", ranked->candidates.size(),
      " layouts ranked can be written as ", target,
      "'s configuration (--top 0 considers every feasible layout)"));
}

}  // namespace

int RunPlan(const std::vector<std::string>& args, std::ostream& out,
            std::ostream& err) {
  FlagSet flags(kCommand);
  WorkloadFlags workload_flags;
  workload_flags.Register(&flags);
  std::optional<int64_t> top;
  OutputFlags output;
  std::optional<std::string> calibration_path;
  flags.AddSection("Output");
  flags.AddInt("top", "N",
               "layouts listed, best tokens/s first (default 10; 0: all "
               "feasible)",
               &top);
  output.Register(&flags);
  flags.AddString("calibration", "FILE",
                  "a calibration file from `tessera calibrate` instead of the "
                  "stack's defaults",
                  &calibration_path);
  ExportFlags exports;
  exports.Register(&flags);
  PlannerFlags planner;
  planner.Register(&flags,
                   "rank on the planner service at HOST:PORT, with its "
                   "calibration (default: locally, with the defaults)");
  if (FlagSet::WantsHelp(args)) {
    out << kAbout << flags.Help() << "\n" << kExitStatusHelp;
    return kExitOk;
  }
  if (absl::Status s = flags.Parse(args); !s.ok()) {
    return ReportError(err, kCommand, s);
  }
  if (absl::Status s = planner.Validate(); !s.ok()) {
    return ReportError(err, kCommand, s);
  }
  if (absl::Status s = exports.Validate(); !s.ok()) {
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
  std::optional<PlanUncertainty> uncertainty;
  absl::StatusOr<planner::SearchResult> result =
      Rank(*study, calibration_path, planner, *options, err, &uncertainty);
  if (!result.ok()) return ReportError(err, kCommand, result.status());
  const PlanUncertainty* u = uncertainty ? &*uncertainty : nullptr;
  if (!exports.requested() || exports.to_file()) {
    if (output.format() == OutputFormat::kJson) {
      out << DumpJson(PlanJson(*result, u)) << "\n";
    } else if (output.format() == OutputFormat::kCsv) {
      PrintPlanCsv(*result, u, out);
    } else {
      PrintPlan(study->workload, *result, out, u, output.table_width());
    }
  }
  if (exports.requested()) {
    if (absl::Status s = ExportBest(*study, *result, calibration_path, planner,
                                    *options, exports, out, err);
        !s.ok()) {
      const int code = ReportError(err, kCommand, s);
      // Nothing feasible to export is what exit 3 says.
      return s.code() == absl::StatusCode::kFailedPrecondition ? kExitNoFeasible
                                                               : code;
    }
  }
  return result->feasible > 0 ? kExitOk : kExitNoFeasible;
}

}  // namespace tessera::cli
