#include "cli/plan_command.h"

#include <cstdint>
#include <map>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/calibration_flag.h"
#include "cli/exit_codes.h"
#include "cli/export_flag.h"
#include "cli/output_format.h"
#include "cli/plan_output.h"
#include "cli/planner_client.h"
#include "cli/scale_output.h"
#include "cli/workload_flags.h"
#include "core/flags.h"
#include "core/layout.h"
#include "core/status_macros.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/search/scale_search.h"
#include "costmodel/search/search.h"
#include "costmodel/stacks/stack_calibration.h"
#include "proto/convert.h"
#include "service/plan_convert.h"

namespace tessera::cli {
namespace {

constexpr char kCommand[] = "tessera plan";

constexpr char kAbout[] =
    "Usage: tessera plan (--spec FILE | workload flags) [--top N]\n"
    "                    [--objective time|energy|gpu-hours] [--deadline DAYS]\n"
    "                    [--charge-idle] [--node-counts COUNTS]\n"
    "                    [-o table|wide|json|csv]\n"
    "                    [--export TARGET [--out FILE]]\n"
    "\n"
    "Ranks every feasible parallel layout (tp, sp, pp, vpp, cp, dp, ZeRO\n"
    "stage, HSDP shard group, micro-batch, recompute) of the workload with\n"
    "the cost model's default calibration, offline: no service, no GPU.\n"
    "Prints the top layouts by tokens/s, the best-throughput and best-energy\n"
    "layouts with the full run's days, MWh and GPU-hours (with\n"
    "--total-tokens), and the Pareto front of tokens/s against tokens/J.\n"
    "The GPU count is searched too: the same search on part of the cluster\n"
    "(whole nodes, the global batch kept), and the front of the run's time\n"
    "against its energy and GPU-hours across counts. The layouts printed\n"
    "are those of the count the objective chooses (--objective; with\n"
    "--deadline the least energy that meets it); the end says what the\n"
    "last GPUs buy and what happens to the GPUs the run leaves unused.\n"
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
    "  tessera plan --model llama2-7b --gpu h100-sxm --nodes 256 \\\n"
    "      --gpus-per-node 8 --global-batch 4096 --seq-len 4096 \\\n"
    "      --stack torchtitan --total-tokens 1e12 --deadline 10\n"
    "  tessera plan --spec deploy/examples/study.json --json\n"
    "  tessera plan --spec deploy/examples/study.json --planner "
    "127.0.0.1:50051\n";

// The planner service's ranking of `spec` (its current calibration), as a
// local search returns it, and how sure the service is of it.
absl::StatusOr<costmodel::SearchResult> PlanOnService(
    const PlannerFlags& planner, const v1::StudySpec& spec,
    std::optional<PlanUncertainty>* uncertainty) {
  PlannerClient client(*planner.planner, planner.Timeout(),
                       planner.Credentials());
  v1::PlanRequest request;
  *request.mutable_study() = spec;
  absl::StatusOr<v1::PlanResponse> response = client.Plan(request);
  if (!response.ok()) return response.status();
  absl::StatusOr<costmodel::SearchResult> result =
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
absl::StatusOr<costmodel::SearchResult> Rank(
    const Study& study, const std::optional<std::string>& calibration_path,
    const PlannerFlags& planner, const costmodel::SearchOptions& options,
    std::ostream& err, std::optional<PlanUncertainty>* uncertainty) {
  const bool on_service = planner.planner.has_value();
  TESSERA_ASSIGN_OR_RETURN(
      CommandCalibration calibration,
      CalibrationForCommand(study.workload, calibration_path, on_service, err));
  if (on_service) return PlanOnService(planner, study.spec, uncertainty);
  TESSERA_ASSIGN_OR_RETURN(
      costmodel::SearchResult result,
      costmodel::SearchLayouts(study.workload, calibration.calibration, options));
  *uncertainty = costmodel::AssessPlan(
      study.workload, result, calibration.calibration, calibration.uncertainty);
  return result;
}

// --export of a plan: the best candidate the target can write, ranked for
// the target's stack. When the plan's stack is another, the workload is
// ranked again with the target's stack (its default options) and a note
// says so; when the best layouts cannot be written in the target's
// configuration (a DeepSpeed JSON has no pipeline), the best that can is
// exported and a note names what was passed over.
absl::Status ExportBest(const Study& study, const costmodel::SearchResult& plan,
                        const std::optional<std::string>& calibration_path,
                        const PlannerFlags& planner,
                        const costmodel::SearchOptions& options,
                        const ExportFlags& exports, std::ostream& out,
                        std::ostream& err) {
  const std::string target(exporters::ExportTargetName(exports.Target()));
  const Study* ranked_study = &study;
  const costmodel::SearchResult* ranked = &plan;
  Study restacked;
  costmodel::SearchResult reranked;
  if (exports.OtherStack(study.workload)) {
    restacked.spec = study.spec;
    restacked.spec.mutable_training()->set_stack(exports.TargetStack());
    restacked.spec.mutable_training()->clear_stack_options();
    absl::StatusOr<Workload> w = CheckedWorkloadFromSpec(restacked.spec);
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
    absl::StatusOr<exporters::LayoutExport> e =
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

// The GPU count flags over the spec's search.scale: --objective,
// --deadline, --charge-idle, --node-counts ladder|all|cluster|N,N,...
struct ScaleFlags {
  std::optional<std::string> objective;
  std::optional<double> deadline_days;
  std::optional<bool> charge_idle;
  std::optional<std::string> node_counts;

  void Register(FlagSet* flags) {
    flags->AddSection("GPU count");
    flags->AddString("objective", "time|energy|gpu-hours",
                     "what the GPU count and the layout minimise for the "
                     "whole run (default time; energy with --deadline)",
                     &objective);
    flags->AddDouble("deadline", "DAYS",
                     "the run must end within DAYS (needs --total-tokens): "
                     "the least energy, or --objective, that meets it",
                     &deadline_days);
    flags->AddSwitch("charge-idle",
                     "charge the GPUs the run leaves unused their idle power "
                     "(default: not charged, they can run other work)",
                     &charge_idle);
    flags->AddString("node-counts", "ladder|all|cluster|N,N,...",
                     "whole-node counts searched: ladder (default: 1, 2, 3, "
                     "4, 6, 8, 12, ... and the cluster), all (every count), "
                     "cluster (the whole cluster only), or a list",
                     &node_counts);
  }

  // Writes the flags given into `scale`; `nodes` is the cluster's.
  absl::Status Apply(int64_t nodes, v1::ScaleSearch* scale) const {
    if (objective.has_value()) scale->set_objective(*objective);
    if (deadline_days.has_value()) {
      if (!(*deadline_days > 0)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--deadline: must be positive days, got ", *deadline_days));
      }
      scale->set_deadline_days(*deadline_days);
    }
    if (charge_idle.has_value()) scale->set_charge_idle_gpus(*charge_idle);
    if (!node_counts.has_value()) return absl::OkStatus();
    scale->clear_node_counts();
    if (*node_counts == "ladder") return absl::OkStatus();
    if (*node_counts == "cluster") {
      scale->add_node_counts(nodes);
      return absl::OkStatus();
    }
    if (*node_counts == "all") {
      for (int64_t n = 1; n <= nodes; ++n) scale->add_node_counts(n);
      return absl::OkStatus();
    }
    for (absl::string_view part : absl::StrSplit(*node_counts, ',')) {
      int64_t n = 0;
      if (!absl::SimpleAtoi(part, &n) || n < 1 || n > nodes) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--node-counts: '", part,
            "' is not ladder, all, cluster or a node count in 1..", nodes));
      }
      scale->add_node_counts(n);
    }
    return absl::OkStatus();
  }
};

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
  ScaleFlags scale_flags;
  scale_flags.Register(&flags);
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
  if (absl::Status s = scale_flags.Apply(
          study->workload.cluster.nodes,
          study->spec.mutable_search()->mutable_scale());
      !s.ok()) {
    return ReportError(err, kCommand, s);
  }
  absl::StatusOr<costmodel::ScaleOptions> options =
      ScaleOptionsFromSpec(study->spec.search());
  if (options.ok()) {
    if (absl::Status s =
            costmodel::ValidateScaleOptions(study->workload, *options);
        !s.ok()) {
      options = s;
    }
  }
  if (!options.ok()) {
    absl::Status s = options.status();
    if (top.has_value() && absl::StrContains(s.message(), "search.top")) {
      s = absl::InvalidArgumentError(absl::StrCat(s.message(), " (--top)"));
    } else if (workload_flags.spec_path.has_value()) {
      s = absl::InvalidArgumentError(
          absl::StrCat("spec: ", *workload_flags.spec_path, ": ", s.message()));
    }
    return ReportError(err, kCommand, s);
  }
  const bool on_service = planner.planner.has_value();
  absl::StatusOr<CommandCalibration> calibration =
      CalibrationForCommand(study->workload, calibration_path, on_service, err);
  if (!calibration.ok()) {
    return ReportError(err, kCommand, calibration.status());
  }
  const costmodel::Calibration& c = calibration->calibration;
  // Each count's layouts: searched here, or by the service for that count
  // (one Plan call each, with the service's uncertainty kept by count).
  std::map<int64_t, PlanUncertainty> service_uncertainty;
  absl::StatusOr<costmodel::ScaleResult> scale =
      on_service
          ? costmodel::SearchScale(
                study->workload, *options,
                [&](const Workload& at) -> absl::StatusOr<costmodel::SearchResult> {
                  v1::StudySpec spec = study->spec;
                  spec.mutable_cluster()->set_nodes(at.cluster.nodes);
                  std::optional<PlanUncertainty> u;
                  absl::StatusOr<costmodel::SearchResult> r =
                      PlanOnService(planner, spec, &u);
                  if (r.ok() && u.has_value()) {
                    service_uncertainty[at.cluster.nodes] = *std::move(u);
                  }
                  return r;
                })
          : costmodel::SearchScale(study->workload, c, *options);
  if (!scale.ok()) return ReportError(err, kCommand, scale.status());
  // The layouts shown: the chosen count's, or with nothing feasible the
  // largest count searched.
  int64_t shown = scale->chosen_count;
  for (int64_t i = static_cast<int64_t>(scale->counts.size()) - 1;
       shown < 0 && i >= 0; --i) {
    if (scale->counts[static_cast<size_t>(i)].skipped.empty()) shown = i;
  }
  const costmodel::ScaleCount& count = scale->counts[static_cast<size_t>(shown)];
  const costmodel::SearchResult* result = &count.search;
  const Workload at_count =
      costmodel::WorkloadOnNodes(study->workload, count.nodes);
  std::optional<PlanUncertainty> uncertainty;
  if (on_service) {
    auto it = service_uncertainty.find(count.nodes);
    if (it != service_uncertainty.end()) uncertainty = it->second;
  } else {
    uncertainty =
        costmodel::AssessPlan(at_count, *result, c, calibration->uncertainty);
  }
  const PlanUncertainty* u = uncertainty ? &*uncertainty : nullptr;
  if (!exports.requested() || exports.to_file()) {
    if (output.format() == OutputFormat::kJson) {
      nlohmann::json j = PlanJson(*result, u);
      j["scale"] = ScaleJson(study->workload, *scale, *options);
      out << DumpJson(j) << "\n";
    } else if (output.format() == OutputFormat::kCsv) {
      PrintPlanCsv(*result, u, out);
    } else {
      PrintPlan(at_count, *result, out, u, output.table_width());
      PrintScale(study->workload, *scale, *options, out);
    }
  }
  if (exports.requested()) {
    // The count the layouts are for; ExportBest ranks again there when the
    // target runs another stack.
    Study chosen = *study;
    chosen.spec.mutable_cluster()->set_nodes(count.nodes);
    chosen.workload = at_count;
    if (absl::Status s = ExportBest(chosen, *result, calibration_path, planner,
                                    options->layouts, exports, out, err);
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
