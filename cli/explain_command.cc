#include "cli/explain_command.h"

#include <cstdint>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/calibration_flag.h"
#include "cli/exit_codes.h"
#include "cli/layout_explanation.h"
#include "cli/operands.h"
#include "cli/plan_output.h"
#include "cli/workload_flags.h"
#include "core/flags.h"
#include "core/layout.h"
#include "core/layout_json.h"
#include "core/units.h"
#include "costmodel/fit/prediction_uncertainty.h"
#include "costmodel/memory/memory_model.h"
#include "costmodel/prediction.h"
#include "costmodel/search/search.h"

namespace tessera::cli {
namespace {

constexpr char kCommand[] = "tessera explain";

constexpr char kAbout[] =
    "Usage: tessera explain LAYOUT (--spec FILE | workload flags) [--json]\n"
    "\n"
    "One layout's full account for the workload, with the cost model's\n"
    "default calibration (or --calibration FILE): its rank among every\n"
    "feasible layout, the step time as compute + exposed communication by\n"
    "parallelism (tp, cp, pp, dp) + pipeline bubble, throughput and MFU\n"
    "(against the GPU's dense peak, named), memory per GPU by what holds it\n"
    "against the usable memory (the GPU's less --headroom), communication\n"
    "in all and exposed, power, the full run, and what separates it from\n"
    "the best layout, with whether the two are within the model's error.\n"
    "An infeasible layout says why, and its memory when memory is why.\n"
    "\n"
    "LAYOUT is key=value pairs as `tessera predict --layout` takes them.\n"
    "\n"
    "JSON: {\"layout\", \"feasible\", \"reason\", \"prediction\" (as "
    "predict's),\n"
    "\"rank\", \"feasible_layouts\", \"usable_memory_gib\",\n"
    "\"headroom_gib\", \"best\": {\"layout\", \"prediction\"},\n"
    "\"vs_best\", \"within_error_of_best\", \"uncertainty_source\"}; rank\n"
    "is null for an infeasible layout.\n"
    "\n"
    "Example:\n"
    "  tessera explain tp=2,pp=2,micro_batch=1 --spec "
    "deploy/examples/study.json\n";


}  // namespace

int RunExplain(const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err) {
  FlagSet flags(kCommand);
  WorkloadFlags workload_flags;
  workload_flags.Register(&flags);
  bool json = false;
  std::optional<std::string> calibration_path;
  flags.AddSection("Output");
  flags.AddSwitch("json", "print one JSON object", &json);
  flags.AddString("calibration", "FILE",
                  "a calibration file from `tessera calibrate` instead of the "
                  "stack's defaults",
                  &calibration_path);
  if (FlagSet::WantsHelp(args)) {
    out << kAbout << flags.Help() << "\n" << kExitStatusHelp;
    return kExitOk;
  }
  const Operands operands = SplitOperands(args, {"json", "tie-embeddings"});
  if (absl::Status s = flags.Parse(operands.flags); !s.ok()) {
    return ReportError(err, kCommand, s);
  }
  if (absl::Status s =
          ExpectOperands(operands, {"LAYOUT"}, "tessera explain LAYOUT");
      !s.ok()) {
    return ReportError(err, kCommand, s);
  }
  absl::StatusOr<Layout> layout = ParseLayout(operands.operands[0]);
  if (!layout.ok()) {
    return ReportError(err, kCommand,
                       absl::InvalidArgumentError(absl::StrCat(
                           layout.status().message(), " (LAYOUT)")));
  }
  absl::StatusOr<Study> study = workload_flags.Resolve();
  if (!study.ok()) return ReportError(err, kCommand, study.status());
  const Workload& w = study->workload;
  absl::StatusOr<CommandCalibration> calibration =
      CalibrationForCommand(w, calibration_path, false, err);
  if (!calibration.ok()) {
    return ReportError(err, kCommand, calibration.status());
  }
  const costmodel::Calibration& c = calibration->calibration;
  const costmodel::LayoutEvaluation e = costmodel::PredictLayout(w, *layout, c);
  // Every feasible layout, to rank this one among them.
  costmodel::SearchOptions all;
  all.top = 0;
  absl::StatusOr<costmodel::SearchResult> search =
      costmodel::SearchLayouts(w, c, all);
  if (!search.ok()) return ReportError(err, kCommand, search.status());
  std::optional<int64_t> rank;
  if (e.feasible) {
    for (size_t i = 0; i < search->candidates.size(); ++i) {
      if (search->candidates[i].layout == e.layout) {
        rank = static_cast<int64_t>(i) + 1;
        break;
      }
    }
  }
  const costmodel::LayoutEvaluation* best =
      search->candidates.empty() ? nullptr : &search->candidates.front();
  std::optional<bool> within_error;
  if (e.feasible && best != nullptr) {
    const costmodel::RankingUncertainty ranking =
        costmodel::AssessRanking(w, {*best, e}, c, calibration->uncertainty);
    within_error = ranking.within_error_of_best.at(1);
  }
  const double usable_gib = costmodel::UsableMemoryBytes(w.cluster) / kGiB;
  const double headroom_gib = MemoryHeadroomBytes(w.cluster) / kGiB;
  const std::string vs_best =
      e.feasible && best != nullptr
          ? WhatSeparates(e.prediction, best->prediction)
          : "";

  if (json) {
    nlohmann::json j = PredictJson(e);
    j["rank"] = rank.has_value() ? nlohmann::json(*rank) : nlohmann::json();
    j["feasible_layouts"] = search->feasible;
    j["usable_memory_gib"] = usable_gib;
    j["headroom_gib"] = headroom_gib;
    j["best"] = best != nullptr ? CandidateJson(*best) : nlohmann::json();
    j["vs_best"] = vs_best.empty() ? nlohmann::json() : nlohmann::json(vs_best);
    j["within_error_of_best"] = within_error.has_value()
                                    ? nlohmann::json(*within_error)
                                    : nlohmann::json();
    j["uncertainty_source"] = calibration->uncertainty.source;
    out << DumpJson(j) << "\n";
    return kExitOk;
  }

  // The prediction as `predict` prints it, then where it ranks, its step
  // and memory accounted for, and how it differs from the best.
  const costmodel::StepTimeInterval interval =
      e.feasible ? costmodel::IntervalOf(w, e, c, calibration->uncertainty)
                 : costmodel::StepTimeInterval{};
  PrintPrediction(w, e, out, e.feasible ? &interval : nullptr,
                  calibration->uncertainty.source);
  if (!e.feasible) {
    if (best != nullptr) {
      out << "the best feasible layout: " << FormatLayout(best->layout)
          << " (tessera explain it)\n";
    }
    return kExitOk;
  }
  out << absl::StrFormat("rank:           %d of %d feasible layouts\n",
                         rank.value_or(0), search->feasible);
  out << "step account:   " << StepAccount(e.prediction) << "\n";
  out << absl::StrFormat(
      "memory left:    %.1f GiB of the usable %.1f GiB (%.1f GiB less %.1f "
      "GiB headroom)\n",
      usable_gib - e.prediction.memory_gib_per_gpu, usable_gib,
      static_cast<double>(w.cluster.gpu.memory_bytes) / kGiB, headroom_gib);
  if (rank.value_or(0) == 1) {
    out << "vs the best:    it is the best layout\n";
  } else if (best != nullptr) {
    out << "the best:       " << FormatLayout(best->layout) << "\n"
        << "                " << StepAccount(best->prediction) << "\n";
    out << "vs the best:    " << vs_best
        << (within_error.value_or(false)
                ? "; within the model's error: trials can order the two"
                : "; beyond the model's error")
        << "\n";
  }
  return kExitOk;
}

}  // namespace tessera::cli
