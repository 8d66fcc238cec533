#include "service/calibration_exchange.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "core/gpu.h"
#include "core/status_macros.h"
#include "service/cluster_probe.h"
#include "service/recalibration.h"
#include "costmodel/stacks/stack_calibration.h"

namespace tessera::service {

absl::StatusOr<CheckedImport> CheckImport(
    const v1::ImportCalibrationRequest& request) {
  const std::string source =
      request.source().empty() ? "calibration" : request.source();
  CheckedImport out;
  TESSERA_ASSIGN_OR_RETURN(out.file, costmodel::ParseCalibrationFile(
                                         request.calibration_json(), source));
  if (out.file.gpu.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source,
                     ": gpu: required to import (the planner keeps "
                     "calibrations per GPU)"));
  }
  absl::StatusOr<GpuSpec> gpu = GpuPreset(out.file.gpu);
  if (!gpu.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": gpu: ", gpu.status().message()));
  }
  out.row.gpu = gpu->name;
  out.row.file_json = request.calibration_json();
  out.row.source = source;
  return out;
}

absl::StatusOr<v1::ImportCalibrationResponse> StoreImport(
    db::TrialStore& store, const CheckedImport& checked) {
  TESSERA_ASSIGN_OR_RETURN(const db::ImportedCalibration saved,
                           store.SaveImportedCalibration(checked.row));
  const costmodel::CalibrationFile& file = checked.file;
  v1::ImportCalibrationResponse out;
  out.set_import_id(saved.id);
  out.set_gpu(saved.gpu);
  out.set_stack(file.stack);
  out.set_samples(file.samples);
  out.set_collectives(
      file.calibration.collectives == nullptr
          ? 0
          : static_cast<int64_t>(
                file.calibration.collectives->measurements().size()));
  return out;
}

absl::StatusOr<v1::ImportCalibrationResponse> ImportCalibration(
    db::TrialStore& store, const v1::ImportCalibrationRequest& request) {
  TESSERA_ASSIGN_OR_RETURN(const CheckedImport checked, CheckImport(request));
  return StoreImport(store, checked);
}

absl::StatusOr<GpuCalibrationSources> LatestGpuCalibrationSources(
    db::TrialStore& store, absl::string_view gpu) {
  GpuCalibrationSources out;
  absl::StatusOr<db::ImportedCalibration> row =
      store.LatestImportedCalibration(gpu);
  if (row.ok()) {
    absl::StatusOr<costmodel::CalibrationFile> file =
        costmodel::ParseCalibrationFile(
            row->file_json,
            absl::StrCat("import ", row->id, " (", row->source, ")"));
    if (file.ok()) {
      out.imported = *std::move(file);
      out.imported_row = *std::move(row);
    } else {
      // Imports are checked when they arrive; one that no longer parses was
      // written by another version: plan as if it were not there.
      out.problem = std::string(file.status().message());
    }
  } else if (row.status().code() != absl::StatusCode::kNotFound) {
    return row.status();
  }
  absl::StatusOr<db::Calibration> fit =
      store.LatestCalibration(db::GpuScope(gpu));
  if (fit.ok()) {
    // A fit of no trial is a reset (every trial it had was invalidated:
    // trial_invalidation.h): the GPU is planned as if none had run.
    if (fit->samples > 0 && (!out.imported_row.has_value() ||
                             fit->created_at > out.imported_row->imported_at)) {
      out.trial_fit = *std::move(fit);
    }
  } else if (fit.status().code() != absl::StatusCode::kNotFound) {
    return fit.status();
  }
  TESSERA_ASSIGN_OR_RETURN(const std::vector<db::CollectiveSample> probed,
                           store.ListCollectiveSamples(gpu));
  out.collectives = MergeProbedCollectives(
      out.imported.has_value() ? out.imported->calibration.collectives.get()
                               : nullptr,
      out.imported_row.has_value()
          ? std::optional<absl::Time>(out.imported_row->imported_at)
          : std::nullopt,
      probed);
  out.probed_points = std::count_if(
      probed.begin(), probed.end(), [&](const db::CollectiveSample& p) {
        return !out.imported_row.has_value() ||
               p.measured_at > out.imported_row->imported_at;
      });
  return out;
}

costmodel::Calibration TrialFitPrior(const GpuSpec& gpu,
                                   const GpuCalibrationSources& sources,
                                   absl::string_view stack) {
  costmodel::Calibration prior = TrialStackPrior(
      gpu, sources.imported.has_value() ? &*sources.imported : nullptr, stack);
  if (sources.collectives != nullptr) prior.collectives = sources.collectives;
  return prior;
}

costmodel::PredictionUncertainty GpuPredictionUncertainty(
    const Workload& w, const GpuCalibrationSources& s) {
  const Precision precision = w.training.precision;
  if (s.trial_fit.has_value()) {
    if (w.training.stack != kTrialStack || !w.training.stack_options.empty() ||
        s.trial_fit->samples == 0) {
      return costmodel::DefaultPredictionUncertainty(precision);
    }
    costmodel::PredictionUncertainty u;
    u.model_log_sd = costmodel::ModelLogSdOfMape(s.trial_fit->fit_error);
    u.source = absl::StrCat(
        "the fit of ", s.trial_fit->samples, " trials on ",
        s.trial_fit->scope.substr(4), " (step-time MAPE ",
        absl::StrFormat("%.1f%%", 100 * s.trial_fit->fit_error), ")");
    return u;
  }
  if (s.imported.has_value() && costmodel::FittedForStack(w, *s.imported)) {
    return costmodel::PredictionUncertaintyOf(*s.imported, precision);
  }
  return costmodel::DefaultPredictionUncertainty(precision);
}

namespace {

// The fit of trials as a file: stack "tessera" on `gpu`, its prior the one
// the fit started from, the import's collectives.
costmodel::CalibrationFile TrialFitFile(const GpuSpec& gpu,
                                      const GpuCalibrationSources& s) {
  const costmodel::CalibrationFile* imported =
      s.imported.has_value() ? &*s.imported : nullptr;
  const db::Calibration& fit = *s.trial_fit;
  costmodel::CalibrationFile f;
  f.stack = kTrialStack;
  f.gpu = gpu.name;
  f.architecture = gpu.architecture;
  f.prior = TrialStackPrior(gpu, imported);
  if (s.collectives != nullptr) f.prior.collectives = s.collectives;
  f.calibration = f.prior;
  for (const auto& [name, value] : fit.coefficients) {
    (void)f.calibration.Set(name, value);  // unknown or out of range: skipped
  }
  // The store keeps a fit's values, not which coefficients it varied or how
  // well: "fitted" lists those it moved off the prior.
  for (const costmodel::CoefficientInfo& info : costmodel::Calibration::Infos()) {
    const double prior = *f.prior.Get(info.name);
    const double value = *f.calibration.Get(info.name);
    if (std::abs(value - prior) > 1e-9 * std::max(1.0, std::abs(prior))) {
      f.fitted.push_back(info.name);
    }
  }
  f.samples = fit.samples;
  f.step_time.samples = fit.samples;
  f.step_time.fitted_mape = fit.fit_error;
  f.fitted_from.push_back(
      absl::StrCat("planner trials on ", gpu.name, ": ", fit.samples,
                   " samples (calibration ", fit.id, ", ",
                   absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", fit.created_at,
                                    absl::UTCTimeZone()),
                   ")"));
  if (imported != nullptr) {
    f.fitted_from.push_back(absl::StrCat("starting from import ",
                                         s.imported_row->id, " (",
                                         s.imported_row->source, ")"));
  }
  f.warnings.push_back(
      "the planner keeps a trial fit's values and error, not its spreads: no "
      "posterior_log_sd");
  return f;
}

}  // namespace

absl::StatusOr<v1::ExportCalibrationResponse> ExportCalibration(
    db::TrialStore& store, const v1::ExportCalibrationRequest& request) {
  absl::StatusOr<GpuSpec> gpu = GpuPreset(request.gpu());
  if (!gpu.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpu: ", gpu.status().message()));
  }
  TESSERA_ASSIGN_OR_RETURN(const GpuCalibrationSources s,
                           LatestGpuCalibrationSources(store, gpu->name));
  v1::ExportCalibrationResponse out;
  if (s.trial_fit.has_value()) {
    out.set_calibration_json(
        costmodel::CalibrationFileJson(TrialFitFile(*gpu, s)));
    out.set_origin(
        absl::StrCat("the fit of ", s.trial_fit->samples, " trial samples on ",
                     gpu->name, " (calibration ", s.trial_fit->id, ")",
                     s.imported_row.has_value()
                         ? absl::StrCat(" over import ", s.imported_row->id)
                         : ""));
    return out;
  }
  if (s.imported_row.has_value() && s.probed_points > 0 &&
      s.imported.has_value()) {
    costmodel::CalibrationFile f = *s.imported;
    f.calibration.collectives = s.collectives;
    f.fitted_from.push_back(absl::StrCat(
        "the planner's cluster probes on ", gpu->name, ": ", s.probed_points,
        " collective points, newer than the import"));
    out.set_calibration_json(costmodel::CalibrationFileJson(f));
    out.set_origin(absl::StrCat("import ", s.imported_row->id, " (",
                                s.imported_row->source, ") with ",
                                s.probed_points, " cluster-probe points"));
    return out;
  }
  if (s.imported_row.has_value()) {
    out.set_calibration_json(s.imported_row->file_json);
    out.set_origin(absl::StrCat("import ", s.imported_row->id, " (",
                                s.imported_row->source, ")"));
    return out;
  }
  return absl::NotFoundError(absl::StrCat(
      "calibration for gpu ", gpu->name,
      ": none (import one with `tessera calibration import`, or run a study "
      "on it)",
      s.problem.empty() ? "" : absl::StrCat("; set aside: ", s.problem)));
}

}  // namespace tessera::service
