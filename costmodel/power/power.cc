#include "costmodel/power/power.h"

#include <algorithm>

namespace tessera::costmodel {

double WattsPerGpu(const GpuSpec& gpu, double compute_busy, double comm_busy,
                   double wait_busy, const Calibration& c) {
  const double activity = std::min(
      1.0, std::clamp(compute_busy, 0.0, 1.0) * c.power_compute_activity +
               std::clamp(comm_busy, 0.0, 1.0) * c.power_comm_activity +
               std::clamp(wait_busy, 0.0, 1.0) *
                   c.power_pipeline_wait_activity);
  // docs/cost-model.md (2.8): idle + (max - idle) * (compute*c1 + comm*c2), the pipeline
  // waits apart from the exposed communication.
  return gpu.idle_w + (gpu.tdp_w - gpu.idle_w) * activity;
}

double TokensPerJoule(double tokens_per_step, double watts_per_gpu,
                      double step_time_s, int64_t gpus) {
  const double joules = watts_per_gpu * step_time_s * static_cast<double>(gpus);
  return joules > 0 ? tokens_per_step / joules : 0;
}

FullRunPrediction PredictFullRun(double total_tokens, double tokens_per_s,
                                 double watts_per_gpu, int64_t gpus) {
  FullRunPrediction r;
  if (!(tokens_per_s > 0)) return r;
  const double seconds = total_tokens / tokens_per_s;
  r.days = seconds / 86400;
  r.gpu_hours = seconds / 3600 * static_cast<double>(gpus);
  r.energy_mwh = watts_per_gpu * static_cast<double>(gpus) * seconds / 3.6e9;
  return r;
}

}  // namespace tessera::costmodel
