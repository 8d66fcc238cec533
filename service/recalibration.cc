#include "service/recalibration.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/trial_backend.h"
#include "service/study_queries.h"
#include "service/trial_geometry.h"
#include "costmodel/stacks/stack_calibration.h"
#include "costmodel/stacks/training_stack.h"

namespace tessera::service {

absl::StatusOr<Workload> WorkloadTrialRan(const db::Trial& trial,
                                          const Workload& study_workload,
                                          int64_t layers) {
  absl::StatusOr<TrialPlan> plan =
      PlanOfTrialLayout(study_workload, trial.layout, layers);
  if (!plan.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "trial ", trial.id,
        ": its layout does not map onto its study: ", plan.status().message()));
  }
  Workload w = plan->workload;
  if (TrialStackOf(trial.measured.has_value() ? trial.measured->backend : "",
                   study_workload.training.stack) == kTrialStack) {
    // What ran: the executor, in its own number format (a command trial ran
    // the study's own stack, options and precision).
    w.training.stack = kTrialStack;
    w.training.stack_options.clear();
    w.training.precision = Precision::kBf16;
  }
  return w;
}

std::string TrialStackOf(absl::string_view backend,
                         absl::string_view study_stack) {
  absl::StatusOr<const TrialBackend*> kind = FindTrialBackend(backend);
  if (!kind.ok()) return kTrialStack;
  return (*kind)->trial_stack.empty() ? std::string(study_stack)
                                      : (*kind)->trial_stack;
}

absl::StatusOr<costmodel::CalibrationSample> SampleOfTrial(
    const db::Trial& trial, const Workload& study_workload, int64_t layers) {
  if (trial.status != db::TrialState::kOk || !trial.measured ||
      !(trial.measured->step_time_s.median > 0) ||
      !std::isfinite(trial.measured->step_time_s.median)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "trial ", trial.id, ": no measured step time to calibrate with"));
  }
  TESSERA_ASSIGN_OR_RETURN(Workload ran,
                           WorkloadTrialRan(trial, study_workload, layers));
  const db::TrialMeasurement& m = *trial.measured;
  costmodel::CalibrationSample s;
  s.workload = std::move(ran);
  s.layout = trial.layout;
  s.step_time_s = m.step_time_s.median;
  absl::StatusOr<const TrialBackend*> backend = FindTrialBackend(m.backend);
  const bool split = backend.ok() && (*backend)->times_comm_apart;
  const bool memory = backend.ok() && (*backend)->measures_model_memory;
  if (split) {
    if (m.compute_s > 0 && std::isfinite(m.compute_s))
      s.compute_s = m.compute_s;
    if (m.comm_s >= 0 && std::isfinite(m.comm_s)) s.comm_s = m.comm_s;
    if (m.exposed_comm_s >= 0 && std::isfinite(m.exposed_comm_s)) {
      s.exposed_comm_s = m.exposed_comm_s;
    }
  }
  if (m.watts_per_gpu.has_value() && *m.watts_per_gpu > 0 &&
      std::isfinite(*m.watts_per_gpu)) {
    s.watts_per_gpu = m.watts_per_gpu;
  }
  if (memory && m.peak_memory_bytes > 0 &&
      std::isfinite(static_cast<double>(m.peak_memory_bytes))) {
    s.peak_memory_bytes = static_cast<double>(m.peak_memory_bytes);
  }
  s.weight = static_cast<double>(std::max<int64_t>(m.steps, 1));
  return s;
}

costmodel::Calibration TrialStackPrior(const GpuSpec& gpu,
                                     const costmodel::CalibrationFile* imported,
                                     absl::string_view stack_name) {
  absl::StatusOr<const costmodel::TrainingStack*> stack =
      costmodel::FindStack(stack_name);
  if (!stack.ok()) return costmodel::Calibration{};
  absl::StatusOr<costmodel::Calibration> c =
      costmodel::StackCalibration(**stack, gpu, {});
  costmodel::Calibration prior = c.ok() ? *c : costmodel::Calibration{};
  if (imported == nullptr) return prior;
  if (imported->stack == stack_name && imported->stack_options.empty()) {
    return imported->calibration;
  }
  prior = costmodel::WithHardwareOf(imported->calibration, prior);
  prior.collectives = imported->calibration.collectives;
  return prior;
}

costmodel::Calibration StudyCalibration(
    const Workload& workload,
    const std::optional<costmodel::Calibration>& trial_fit,
    const costmodel::CalibrationFile* imported, absl::string_view fit_stack) {
  absl::StatusOr<costmodel::Calibration> defaults =
      costmodel::DefaultCalibration(workload);
  costmodel::Calibration base =
      defaults.ok() ? *defaults : costmodel::Calibration{};
  if (imported != nullptr) {
    absl::StatusOr<costmodel::Calibration> from_file =
        costmodel::CalibrationFromFile(workload, *imported, "the import",
                                     nullptr);
    if (from_file.ok()) base = *std::move(from_file);
  }
  if (!trial_fit.has_value()) return base;
  const bool same_stack =
      workload.training.stack == fit_stack &&
      (fit_stack != kTrialStack || workload.training.stack_options.empty());
  costmodel::Calibration c =
      same_stack ? *trial_fit : costmodel::WithHardwareOf(*trial_fit, base);
  c.collectives = base.collectives;
  return c;
}

costmodel::Calibration CalibrationFromStored(const db::Calibration& stored,
                                           std::vector<std::string>* skipped) {
  costmodel::Calibration c;
  for (const auto& [name, value] : stored.coefficients) {
    if (!c.Set(name, value).ok() && skipped != nullptr) {
      skipped->push_back(name);
    }
  }
  return c;
}

std::map<std::string, double> CalibrationToMap(
    const costmodel::Calibration& calibration) {
  std::map<std::string, double> out;
  for (const costmodel::CoefficientInfo& info : costmodel::Calibration::Infos()) {
    absl::StatusOr<double> value = calibration.Get(info.name);
    if (value.ok()) out[info.name] = *value;
  }
  return out;
}

db::Calibration StoredCalibration(const costmodel::CalibrationFit& fit,
                                  std::string scope,
                                  const std::vector<int64_t>& trial_ids) {
  db::Calibration c;
  c.scope = std::move(scope);
  c.coefficients = CalibrationToMap(fit.calibration);
  c.samples = fit.samples;
  c.fit_error = fit.fitted_step_time_mape;
  for (size_t i = 0; i < trial_ids.size(); ++i) {
    const bool excluded = i < fit.residuals.size() && fit.residuals[i].excluded;
    (excluded ? c.excluded_trial_ids : c.trial_ids).push_back(trial_ids[i]);
  }
  std::sort(c.trial_ids.begin(), c.trial_ids.end());
  std::sort(c.excluded_trial_ids.begin(), c.excluded_trial_ids.end());
  return c;
}

bool SameGpu(const GpuSpec& a, const GpuSpec& b) {
  return a.peak_dense_tflops == b.peak_dense_tflops &&
         a.memory_bytes == b.memory_bytes && a.hbm_gbs == b.hbm_gbs &&
         a.nvlink_gbs == b.nvlink_gbs && a.inter_node_gbs == b.inter_node_gbs &&
         a.tdp_w == b.tdp_w && a.idle_w == b.idle_w;
}

absl::StatusOr<TrialSamples> SamplesOfTrials(
    db::TrialStore& store, const std::vector<db::Trial>& trials,
    const GpuSpec& gpu, absl::string_view stack,
    std::map<int64_t, std::pair<Workload, int64_t>> known) {
  // Each study's workload and layers once; nullopt: not on this GPU.
  std::map<int64_t, std::optional<std::pair<Workload, int64_t>>> studies;
  for (auto& [id, workload] : known) studies[id] = std::move(workload);
  TrialSamples out;
  for (const db::Trial& t : trials) {
    if (t.status != db::TrialState::kOk) continue;
    if (studies.count(t.study_id) == 0) {
      absl::StatusOr<db::Study> s = store.GetStudy(t.study_id);
      if (!s.ok() && !absl::IsNotFound(s.status())) return s.status();
      absl::StatusOr<std::pair<Workload, int64_t>> w =
          s.ok() ? StoredStudyWorkload(*s)
                 : absl::StatusOr<std::pair<Workload, int64_t>>(s.status());
      studies[t.study_id] = w.ok() && SameGpu(w->first.cluster.gpu, gpu)
                                ? std::optional(*std::move(w))
                                : std::nullopt;
    }
    const auto& study = studies[t.study_id];
    if (!study.has_value()) {
      out.skipped.push_back(absl::StrCat(
          "trial ", t.id, ": its study is gone or ran another GPU"));
      continue;
    }
    absl::StatusOr<costmodel::CalibrationSample> sample =
        SampleOfTrial(t, study->first, study->second);
    if (!sample.ok()) {
      out.skipped.push_back(std::string(sample.status().message()));
      continue;
    }
    if (sample->workload.training.stack != stack) continue;
    out.samples.push_back(*std::move(sample));
    out.trial_ids.push_back(t.id);
  }
  return out;
}

bool MayCalibrateGpu(const costmodel::CalibrationFit& fit) {
  return fit.samples >= kMinGpuCalibrationTrials &&
         fit.fitted_step_time_mape <= kMaxGpuCalibrationMape;
}

costmodel::CalibrationFitOptions TrialFitOptions() {
  costmodel::CalibrationFitOptions o;
  o.prior_log_sd = kStudyFitPriorLogSd;
  return o;
}

}  // namespace tessera::service
