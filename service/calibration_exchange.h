// Calibration files in and out of the planner service (`tessera calibration
// import|export`, `tessera submit --calibration`). An import is kept whole in
// the store per GPU (db::ImportedCalibration); what the planner then plans
// with on that GPU (recalibration.h StudyCalibration):
//   - the latest import, carried to each study's stack (its coefficients for
//     a study of its stack, its hardware coefficients and measured
//     collectives for any other),
//   - refined by the latest fit of trials on the GPU when that fit is newer
//     than the import (such a fit started from the import: TrialStackPrior);
//     a fit older than the import is set aside: the user's newer import wins.
// An export is that calibration as a file: the import as it was when no
// newer fit exists, else the fit (stack "tessera") with the import's
// measured collectives.
//
//   TESSERA_ASSIGN_OR_RETURN(v1::ImportCalibrationResponse r,
//                            ImportCalibration(*store, request));
//   GpuCalibrationSources s = LatestGpuCalibrationSources(*store, "h100-sxm");
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/workload.h"
#include "db/trial_store.h"
#include "costmodel/calibration/calibration_file.h"
#include "costmodel/fit/prediction_uncertainty.h"
#include "tessera/v1/specs.pb.h"

namespace tessera::service {

// An import that passed its checks, ready to store.
struct CheckedImport {
  costmodel::CalibrationFile file;
  db::ImportedCalibration row;
};

// Checks the file (costmodel::ParseCalibrationFile: every field, every
// coefficient in range; its "gpu" must be a known GPU preset).
// INVALID_ARGUMENT naming the source and the field.
absl::StatusOr<CheckedImport> CheckImport(
    const v1::ImportCalibrationRequest& request);

// Stores a checked import for its GPU.
absl::StatusOr<v1::ImportCalibrationResponse> StoreImport(
    db::TrialStore& store, const CheckedImport& checked);

// CheckImport, then StoreImport: nothing is stored on an error.
absl::StatusOr<v1::ImportCalibrationResponse> ImportCalibration(
    db::TrialStore& store, const v1::ImportCalibrationRequest& request);

// What the planner holds for one GPU.
struct GpuCalibrationSources {
  // The latest import, parsed (nullopt: none, or one that no longer parses:
  // `problem` says why).
  std::optional<costmodel::CalibrationFile> imported;
  std::optional<db::ImportedCalibration> imported_row;
  // The latest fit of trials on the GPU that is newer than the import.
  std::optional<db::Calibration> trial_fit;
  std::string problem;  // "" or why a stored import was set aside
  // The measured collectives to plan with: the import's, with the cluster
  // probes' newer sweeps over them (cluster_probe.h
  // MergeProbedCollectives); null when neither has any.
  std::shared_ptr<const costmodel::MeasuredCollectives> collectives;
  // The cluster probes' samples newer than the import (all without one).
  int64_t probed_points = 0;
};

// Reads them from the store (the cluster probes' samples stored under the
// GPU's name too); store errors other than NOT_FOUND are returned.
absl::StatusOr<GpuCalibrationSources> LatestGpuCalibrationSources(
    db::TrialStore& store, absl::string_view gpu);

// The prior a fit of trials of `stack` on `gpu` starts from: the stack's
// defaults with what was imported for the GPU (TrialStackPrior) and the
// collectives `sources` measured.
costmodel::Calibration TrialFitPrior(const GpuSpec& gpu,
                                   const GpuCalibrationSources& sources,
                                   absl::string_view stack);

// How uncertain the planner's predictions for `workload` are, given what it
// holds for the workload's GPU: with a fit of trials newer than any import,
// for a study of the trials' own stack, the fit's step-time error as the
// model's (no coefficient spreads: the store keeps none); with an import used
// whole for the workload's stack, the import's fit
// (costmodel::PredictionUncertaintyOf); otherwise the stack defaults'
// (costmodel::DefaultPredictionUncertainty).
costmodel::PredictionUncertainty GpuPredictionUncertainty(
    const Workload& workload, const GpuCalibrationSources& sources);

// The planner's calibration for `request.gpu()` as a calibration file;
// NOT_FOUND when it holds neither an import nor a fit for that GPU,
// INVALID_ARGUMENT for a GPU that is not a preset.
absl::StatusOr<v1::ExportCalibrationResponse> ExportCalibration(
    db::TrialStore& store, const v1::ExportCalibrationRequest& request);

}  // namespace tessera::service
