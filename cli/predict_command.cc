#include "cli/predict_command.h"

#include <optional>

#include "absl/strings/str_cat.h"
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
#include "costmodel/calibration/calibration.h"
#include "costmodel/prediction.h"
#include "costmodel/search/scale_search.h"
#include "costmodel/stacks/stack_calibration.h"
#include "proto/convert.h"
#include "service/plan_convert.h"

namespace tessera::cli {
namespace {

constexpr char kCommand[] = "tessera predict";

constexpr char kAbout[] =
    "Usage: tessera predict (--spec FILE | workload flags) --layout LAYOUT "
    "[-o table|json|csv] [--export TARGET [--out FILE]]\n"
    "\n"
    "Predicts one layout with the cost model's default calibration: step\n"
    "time (compute, communication, exposed communication, bubble), tokens/s,\n"
    "MFU, memory per GPU by what holds it, watts and tokens/J, and the full\n"
    "run with --total-tokens. A layout that does not resolve against the\n"
    "workload or does not fit in memory prints `infeasible: <reason>`.\n"
    "With --planner HOST:PORT the planner service predicts it instead, with\n"
    "its current calibration, and the output is the same (exit 1 when the\n"
    "planner cannot be reached).\n"
    "\n"
    "LAYOUT is key=value pairs: tp, sp, pp, vpp, cp, dp, zero, shard_group,\n"
    "micro_batch, grad_accum, recompute (none|selective|full). Omitted\n"
    "fields take their defaults (1, sp=0, zero=0, recompute=none); dp,\n"
    "grad_accum and shard_group are derived.\n"
    "\n"
    "--export torchtitan|megatron|deepspeed|nemo prints the (feasible)\n"
    "layout as that framework's configuration; --out FILE writes it there.\n"
    "\n"
    "Example:\n"
    "  tessera predict --spec deploy/examples/study.json \\\n"
    "      --layout tp=2,pp=1,vpp=1,cp=1,zero=3,micro_batch=2,recompute=none\n";

// The planner service's prediction of `layout` for `spec` (its current
// calibration), as a local prediction returns it, with
// its step-time interval (`*interval`, feasible layouts) and where the
// interval's spreads come from (`*source`).
absl::StatusOr<costmodel::LayoutEvaluation> PredictOnService(
    const PlannerFlags& planner, const v1::StudySpec& spec,
    const Layout& layout, std::optional<costmodel::StepTimeInterval>* interval,
    std::string* source) {
  PlannerClient client(*planner.planner, planner.Timeout(),
                       planner.Credentials());
  v1::PredictRequest request;
  *request.mutable_study() = spec;
  *request.mutable_layout() = LayoutToProto(layout);
  absl::StatusOr<v1::PredictResponse> response = client.Predict(request);
  if (!response.ok()) return response.status();
  absl::StatusOr<costmodel::LayoutEvaluation> evaluation =
      EvaluationFromProto(response->evaluation());
  if (!evaluation.ok()) {
    return absl::InternalError(absl::StrCat(
        "the planner at ", client.address(),
        " answered a malformed layout: ", evaluation.status().message()));
  }
  if (response->has_step_time_interval()) {
    *interval = IntervalFromProto(response->step_time_interval());
  }
  *source = response->uncertainty_source();
  return evaluation;
}

}  // namespace

int RunPredict(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err) {
  FlagSet flags(kCommand);
  WorkloadFlags workload_flags;
  workload_flags.Register(&flags);
  std::optional<std::string> layout_text;
  OutputFlags output;
  std::optional<std::string> calibration_path;
  flags.AddSection("Layout and output");
  flags.AddString("layout", "LAYOUT",
                  "the layout, e.g. tp=2,zero=3,micro_batch=2 (required)",
                  &layout_text);
  output.Register(&flags);
  flags.AddRequirement([](const auto& given) {
    return given("layout") ? std::vector<std::string>{}
                           : std::vector<std::string>{
                                 "layout: required (--layout tp=2,zero=3,...)"};
  });
  flags.AddString("calibration", "FILE",
                  "a calibration file from `tessera calibrate` instead of the "
                  "stack's defaults",
                  &calibration_path);
  ExportFlags exports;
  exports.Register(&flags);
  PlannerFlags planner;
  planner.Register(&flags,
                   "predict on the planner service at HOST:PORT, with its "
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
  if (!layout_text.has_value()) {
    return ReportError(err, kCommand,
                       absl::InvalidArgumentError(
                           "layout: required (--layout tp=2,zero=3,...)"));
  }
  absl::StatusOr<Layout> layout = ParseLayout(*layout_text);
  if (!layout.ok()) {
    return ReportError(err, kCommand,
                       absl::InvalidArgumentError(absl::StrCat(
                           layout.status().message(), " (--layout)")));
  }
  absl::StatusOr<Study> study = workload_flags.Resolve();
  if (!study.ok()) return ReportError(err, kCommand, study.status());
  // The prediction is the stack's: exporting it to another stack would
  // hand over numbers that are not the target's.
  if (absl::Status s = exports.CheckStack(
          study->workload, "this prediction",
          absl::StrCat("add --stack ", exports.TargetStack(),
                       " to predict the layout on the stack the file runs"));
      !s.ok()) {
    return ReportError(err, kCommand, s);
  }
  const bool on_service = planner.planner.has_value();
  absl::StatusOr<CommandCalibration> calibration =
      CalibrationForCommand(study->workload, calibration_path, on_service, err);
  if (!calibration.ok()) {
    return ReportError(err, kCommand, calibration.status());
  }
  const costmodel::Calibration& c = calibration->calibration;
  std::optional<costmodel::StepTimeInterval> interval;
  std::string source = calibration->uncertainty.source;
  absl::StatusOr<costmodel::LayoutEvaluation> evaluation =
      on_service
          ? PredictOnService(planner, study->spec, *layout, &interval, &source)
          : costmodel::PredictLayout(study->workload, *layout, c);
  if (!evaluation.ok()) {
    return ReportError(err, kCommand, evaluation.status());
  }
  if (!on_service && evaluation->feasible) {
    interval = costmodel::IntervalOf(study->workload, *evaluation, c,
                                   calibration->uncertainty);
  }
  const costmodel::StepTimeInterval* i = interval ? &*interval : nullptr;
  if (exports.requested() && !evaluation->feasible) {
    return ReportError(
        err, kCommand,
        absl::InvalidArgumentError(absl::StrCat(
            "--export: the layout is infeasible: ", evaluation->reason)));
  }
  if (!exports.requested() || exports.to_file()) {
    if (output.format() == OutputFormat::kJson) {
      out << DumpJson(PredictJson(*evaluation, i, source)) << "\n";
    } else if (output.format() == OutputFormat::kCsv) {
      PrintPredictionCsv(*evaluation, i, out);
    } else {
      PrintPrediction(study->workload, *evaluation, out, i, source);
      // Its neighbours: the same layout on part of the cluster.
      if (!on_service && evaluation->feasible) {
        PrintLayoutAcrossCounts(
            study->workload,
            costmodel::LayoutAcrossCounts(study->workload, evaluation->layout,
                                        c, costmodel::ScaleOptions{}),
            out);
      }
    }
  }
  if (exports.requested()) {
    if (absl::Status s =
            exports.Write(study->workload, evaluation->layout, out, err);
        !s.ok()) {
      return ReportError(err, kCommand, s);
    }
  }
  return kExitOk;
}

}  // namespace tessera::cli
