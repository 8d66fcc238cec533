#include "cli/report_predictions.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "costmodel/prediction.h"
#include "costmodel/stacks/stack_calibration.h"
#include "proto/convert.h"
#include "service/plan_convert.h"

namespace tessera::cli {
namespace {

TrialBreakdown Missing(std::string why) {
  TrialBreakdown b;
  b.why = std::move(why);
  return b;
}

TrialBreakdown PredictOne(const v1::Trial& trial,
                          const v1::Recommendation& recommendation) {
  absl::StatusOr<Workload> workload = CheckedWorkloadFromSpec(trial.ran());
  if (!workload.ok()) {
    return Missing(absl::StrCat("its run: ", workload.status().message()));
  }
  absl::StatusOr<Layout> layout = LayoutFromProto(trial.layout());
  if (!layout.ok()) {
    return Missing(absl::StrCat("its layout: ", layout.status().message()));
  }
  absl::StatusOr<costmodel::Calibration> calibration =
      costmodel::DefaultCalibration(*workload);
  if (!calibration.ok()) {
    return Missing(
        absl::StrCat("calibration: ", calibration.status().message()));
  }
  // Names this build does not know (an older or newer planner) keep their
  // defaults.
  for (const auto& [name, value] : recommendation.calibration()) {
    calibration->Set(name, value).IgnoreError();
  }
  const costmodel::LayoutEvaluation e =
      costmodel::PredictLayout(*workload, *layout, *calibration);
  if (!e.feasible) return Missing(absl::StrCat("infeasible: ", e.reason));
  TrialBreakdown b;
  b.predicted = true;
  b.prediction = PredictionToProto(e.prediction);
  return b;
}

}  // namespace

std::map<int64_t, TrialBreakdown> PredictTrialBreakdowns(
    const std::vector<v1::Trial>& trials,
    const v1::Recommendation& recommendation) {
  std::map<int64_t, TrialBreakdown> out;
  for (const v1::Trial& t : trials) {
    if (t.state() != v1::TRIAL_OK || !t.has_ran()) continue;
    out[t.id()] = PredictOne(t, recommendation);
  }
  return out;
}

}  // namespace tessera::cli
