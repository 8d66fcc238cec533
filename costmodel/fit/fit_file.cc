#include "costmodel/fit/fit_file.h"

#include <cmath>
#include <optional>

namespace tessera::costmodel {
namespace {

// The MAPE of `quantity` over the residuals that measured it.
std::optional<QuantityError> ErrorOf(
    const std::vector<CalibrationSampleResidual>& residuals,
    std::optional<double> CalibrationSampleResidual::*measured,
    double CalibrationSampleResidual::*prior,
    double CalibrationSampleResidual::*fitted) {
  QuantityError e;
  for (const CalibrationSampleResidual& r : residuals) {
    const std::optional<double>& m = r.*measured;
    if (!m.has_value() || !(*m > 0)) continue;
    ++e.samples;
    e.prior_mape += std::abs(r.*prior / *m - 1);
    e.fitted_mape += std::abs(r.*fitted / *m - 1);
  }
  if (e.samples == 0) return std::nullopt;
  e.prior_mape /= static_cast<double>(e.samples);
  e.fitted_mape /= static_cast<double>(e.samples);
  return e;
}

}  // namespace

CalibrationFile MakeCalibrationFile(const std::string& stack,
                                    const std::vector<std::string>& options,
                                    const GpuSpec& gpu, const Calibration& prior,
                                    const CalibrationFit* fit) {
  CalibrationFile f;
  f.stack = stack;
  f.stack_options = options;
  f.gpu = gpu.name;
  f.architecture = gpu.architecture;
  f.prior = prior;
  f.calibration = prior;
  if (fit == nullptr) return f;
  f.calibration = fit->calibration;
  f.calibration.collectives = prior.collectives;
  f.fitted = fit->fitted;
  f.posterior_log_sd = fit->posterior_log_sd;
  f.prior_log_sd = fit->prior_log_sd;
  f.posterior_covariance = fit->posterior_covariance;
  f.at_bound = fit->at_bound;
  f.samples = fit->samples;
  f.step_time = QuantityError{fit->samples, fit->prior_step_time_mape,
                              fit->fitted_step_time_mape};
  f.peak_memory =
      ErrorOf(fit->residuals,
              &CalibrationSampleResidual::measured_peak_memory_bytes,
              &CalibrationSampleResidual::prior_peak_memory_bytes,
              &CalibrationSampleResidual::fitted_peak_memory_bytes);
  f.watts = ErrorOf(fit->residuals,
                    &CalibrationSampleResidual::measured_watts_per_gpu,
                    &CalibrationSampleResidual::prior_watts_per_gpu,
                    &CalibrationSampleResidual::fitted_watts_per_gpu);
  f.warnings = fit->warnings;
  return f;
}

}  // namespace tessera::costmodel
