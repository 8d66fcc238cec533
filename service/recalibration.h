// From trials to the cost model's calibration and back to the store: the
// samples costmodel/fit/calibration_fit.h fits (each ok trial as it ran:
// its study's workload scaled to the trial's world and layers, its layout, its
// measured step time), and the conversions between costmodel::Calibration and
// the store's named coefficients.
//
// Which measurements a sample carries: the step time always (the median over
// the measured steps), weighted by the measured steps. The compute /
// communication / exposed communication split only from the cuda backend,
// whose CUDA events time kernels and collectives apart: the CPU executor
// times its blocking collective calls, so its "communication" also holds the
// time a rank waits for its peers (pipeline bubble, load imbalance) and would
// bias the communication coefficients. Power only where it was measured
// (NVML), never on CPU.
//
//   TESSERA_ASSIGN_OR_RETURN(costmodel::CalibrationSample s,
//                            SampleOfTrial(trial, study_workload, layers));
//   costmodel::Calibration c = CalibrationFromStored(store_calibration);
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/trial_backend.h"
#include "core/workload.h"
#include "db/trial_store.h"
#include "costmodel/calibration/calibration.h"
#include "costmodel/calibration/calibration_file.h"
#include "costmodel/fit/calibration_fit.h"

namespace tessera::service {

// What a trial of a study with `study_workload` and the trial options'
// `layers` ran: the study's workload at the trial's world, global batch and
// layers, on the stack of the trial's backend (TrialStackOf: Tessera's
// executor, stack "tessera" in bf16; or a command trial's own, the study's
// stack, options and precision). INVALID_ARGUMENT
// naming the trial when its layout no longer maps onto the study.
absl::StatusOr<Workload> WorkloadTrialRan(const db::Trial& trial,
                                          const Workload& study_workload,
                                          int64_t layers);

// The sample of an ok trial of a study with `study_workload` and the trial
// options' `layers`. INVALID_ARGUMENT for a trial without a measured step
// time or whose layout no longer maps onto the study.
absl::StatusOr<costmodel::CalibrationSample> SampleOfTrial(
    const db::Trial& trial, const Workload& study_workload, int64_t layers);

// The stack Tessera's executor runs (trials of backend cpu and cuda).
inline constexpr const char* kTrialStack = kExecutorStack;

// How far a study's refit lets a coefficient move from its prior (log-space
// sd): as `tessera calibrate --prior-sd` defaults to (the stack defaults are
// within about 30% on published runs).
inline constexpr double kStudyFitPriorLogSd = 0.3;

// The options every fit of trials uses (a study's refit, and the refit of
// the calibrations an invalidated trial was in).
costmodel::CalibrationFitOptions TrialFitOptions();

// The stack a trial of `backend` measures in a study of `study_stack`: the
// backend's own (core/trial_backend.h trial_stack), or, for a backend that
// runs the user's framework, the study's. kTrialStack for an unknown or
// empty backend.
std::string TrialStackOf(absl::string_view backend,
                         absl::string_view study_stack);

// The prior of a fit to trials of `stack` on `gpu`: the stack's defaults
// there, with the hardware coefficients of the calibration file imported for
// the GPU (null: none), so that trials refine what the user imported (all of
// the file when it is of `stack` itself).
costmodel::Calibration TrialStackPrior(
    const GpuSpec& gpu, const costmodel::CalibrationFile* imported = nullptr,
    absl::string_view stack = kTrialStack);

// What a study of `workload` plans with, given the latest fit of the trials
// on its GPU (nullopt: none) and the file imported for the GPU (null: none).
// The base is the import as costmodel::CalibrationFromFile carries it to the
// workload's stack, else the stack's defaults (costmodel::DefaultCalibration).
// With a fit of trials of `fit_stack`: the fit itself for a study of that
// stack (and, for kTrialStack, no stack options), otherwise the base with
// the fit's hardware coefficients (costmodel::WithHardwareOf). The import's
// measured collectives are kept either way (trials measure none).
costmodel::Calibration StudyCalibration(
    const Workload& workload,
    const std::optional<costmodel::Calibration>& trial_fit,
    const costmodel::CalibrationFile* imported = nullptr,
    absl::string_view fit_stack = kTrialStack);

// The coefficients of `stored` over the defaults: unknown names and values
// out of range are skipped (and listed in `*skipped` when given).
costmodel::Calibration CalibrationFromStored(
    const db::Calibration& stored, std::vector<std::string>* skipped = nullptr);

// Every coefficient by name.
std::map<std::string, double> CalibrationToMap(
    const costmodel::Calibration& calibration);

// What the store keeps of a fit of the trials `trial_ids` (one per sample, in
// the fit's order): its coefficients, its samples and its step-time MAPE as
// the fit error, and the trials, those the fit left out apart.
db::Calibration StoredCalibration(const costmodel::CalibrationFit& fit,
                                  std::string scope,
                                  const std::vector<int64_t>& trial_ids);

// Whether two GPU descriptions are the same hardware (every figure the cost
// model reads), whatever they are called.
bool SameGpu(const GpuSpec& a, const GpuSpec& b);

// The calibration samples of trials and the trials they came from.
struct TrialSamples {
  std::vector<costmodel::CalibrationSample> samples;
  std::vector<int64_t> trial_ids;    // one per sample
  std::vector<std::string> skipped;  // why a trial gave no sample
};

// The samples of the ok trials among `trials` whose study ran on `gpu` and
// that measured `stack` (TrialStackOf), each with its own study's workload
// and layers (`known` saves reading the studies it holds). A trial whose
// study cannot be read or no longer maps gives no sample (`skipped` says
// why); a store error other than NOT_FOUND is returned.
absl::StatusOr<TrialSamples> SamplesOfTrials(
    db::TrialStore& store, const std::vector<db::Trial>& trials,
    const GpuSpec& gpu, absl::string_view stack,
    std::map<int64_t, std::pair<Workload, int64_t>> known = {});

// Whether a fit of trials may become its GPU's calibration, which every
// later study on the GPU starts from: only from several consistent trials —
// at least kMinGpuCalibrationTrials fitted (outliers not counted) and a
// fitted step-time MAPE at most kMaxGpuCalibrationMape. One trial, or
// trials no single set of coefficients explains, change only their own
// study's calibration.
inline constexpr int64_t kMinGpuCalibrationTrials = 3;
inline constexpr double kMaxGpuCalibrationMape = 0.20;
bool MayCalibrateGpu(const costmodel::CalibrationFit& fit);

}  // namespace tessera::service
