#include "service/trial_invalidation.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "costmodel/fit/calibration_fit.h"
#include "service/calibration_exchange.h"
#include "service/recalibration.h"
#include "service/study_queries.h"

namespace tessera::service {
namespace {

// The trials `calibration` names, newest first (as a study's refit orders
// them); those no longer stored are left out. The invalidated one is among
// them, and gives no sample (SamplesOfTrials takes only ok trials).
absl::StatusOr<std::vector<db::Trial>> TrialsNamedBy(
    db::TrialStore& store, const db::Calibration& calibration) {
  std::vector<int64_t> ids = calibration.trial_ids;
  ids.insert(ids.end(), calibration.excluded_trial_ids.begin(),
             calibration.excluded_trial_ids.end());
  std::sort(ids.rbegin(), ids.rend());
  std::vector<db::Trial> trials;
  for (int64_t id : ids) {
    absl::StatusOr<db::Trial> t = store.GetTrial(id);
    if (absl::IsNotFound(t.status())) continue;
    if (!t.ok()) return t.status();
    trials.push_back(*std::move(t));
  }
  return trials;
}

// The GPU a calibration scope is of: its name, and the hardware its trials
// ran (a study scope's study's; a GPU scope's, that of the study of the
// invalidated trial, which ran on it).
absl::StatusOr<std::pair<std::string, GpuSpec>> GpuOfScope(
    db::TrialStore& store, absl::string_view scope,
    const Workload& invalidated_study) {
  if (absl::StartsWith(scope, "gpu:")) {
    return std::make_pair(std::string(scope.substr(4)),
                          invalidated_study.cluster.gpu);
  }
  int64_t study_id = 0;
  if (!absl::StartsWith(scope, "study:") ||
      !absl::SimpleAtoi(scope.substr(6), &study_id)) {
    return absl::DataLossError(
        absl::StrCat("stored calibration scope '", scope, "' is unknown"));
  }
  TESSERA_ASSIGN_OR_RETURN(const db::Study study, store.GetStudy(study_id));
  TESSERA_ASSIGN_OR_RETURN(const auto workload, StoredStudyWorkload(study));
  return std::make_pair(workload.first.cluster.gpu.name,
                        workload.first.cluster.gpu);
}

}  // namespace

absl::StatusOr<Invalidation> InvalidateTrialAndRecalibrate(
    db::TrialStore& store, int64_t trial_id, absl::string_view reason) {
  TESSERA_ASSIGN_OR_RETURN(const db::Trial bad, store.GetTrial(trial_id));
  TESSERA_ASSIGN_OR_RETURN(const std::vector<std::string> scopes,
                           store.ScopesCalibratedWith(trial_id));
  TESSERA_RETURN_IF_ERROR(store.InvalidateTrial(trial_id, reason));
  Invalidation out;
  out.trial_id = trial_id;
  if (scopes.empty()) return out;

  // The trial's study says which stack its trials measured and on what GPU.
  TESSERA_ASSIGN_OR_RETURN(const db::Study study, store.GetStudy(bad.study_id));
  TESSERA_ASSIGN_OR_RETURN(const auto study_workload,
                           StoredStudyWorkload(study));
  const std::string stack =
      TrialStackOf(bad.measured.has_value() ? bad.measured->backend : "",
                   study_workload.first.training.stack);
  for (const std::string& scope : scopes) {
    TESSERA_ASSIGN_OR_RETURN(const db::Calibration old,
                             store.LatestCalibration(scope));
    TESSERA_ASSIGN_OR_RETURN(const std::vector<db::Trial> trials,
                             TrialsNamedBy(store, old));
    TESSERA_ASSIGN_OR_RETURN(const auto gpu,
                             GpuOfScope(store, scope, study_workload.first));
    TESSERA_ASSIGN_OR_RETURN(const TrialSamples of,
                             SamplesOfTrials(store, trials, gpu.second, stack,
                                             {{bad.study_id, study_workload}}));
    TESSERA_ASSIGN_OR_RETURN(const GpuCalibrationSources sources,
                             LatestGpuCalibrationSources(store, gpu.first));
    const costmodel::Calibration prior =
        TrialFitPrior(gpu.second, sources, stack);
    db::Calibration again;
    std::string line;
    if (!of.samples.empty()) {
      TESSERA_ASSIGN_OR_RETURN(const costmodel::CalibrationFit fit,
                               costmodel::FitCalibration(of.samples, prior,
                                                       TrialFitOptions()));
      if (!absl::StartsWith(scope, "gpu:") || MayCalibrateGpu(fit)) {
        again = StoredCalibration(fit, scope, of.trial_ids);
        line = absl::StrFormat(
            "%s: fitted again on %d trial%s (step-time MAPE %.1f%%)", scope,
            fit.samples, fit.samples == 1 ? "" : "s",
            100 * fit.fitted_step_time_mape);
      }
    }
    if (again.scope.empty()) {
      // Nothing consistent left to fit: back to what no trial says.
      again.scope = scope;
      again.coefficients = CalibrationToMap(prior);
      line = absl::StrCat(scope,
                          ": back to its prior (too few consistent trials "
                          "left to fit)");
    }
    TESSERA_RETURN_IF_ERROR(store.SaveCalibration(again).status());
    out.recalibrated.push_back(std::move(line));
  }
  return out;
}

}  // namespace tessera::service
