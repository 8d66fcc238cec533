// GPU power and energy (docs/cost-model.md, "Power and energy"): a GPU draws its idle power plus a
// share of the range up to TDP set by what each phase of the step keeps it
// doing:
//   watts = idle + (tdp - idle) * min(1,
//             compute_busy * power_compute_activity
//             + exposed_comm_busy * power_comm_activity
//             + pipeline_wait_busy * power_pipeline_wait_activity),
// busy fractions being each phase's time over the step time (each clamped to
// [0, 1]): the compute on the critical path, the exposed communication, and
// the pipeline bubble (waits on a neighbouring stage), the last two when
// NCCL kernels spin on the SMs (so power stays near the compute figure as
// communication grows, by default; NVML trials refit each share).
// Communication hidden under compute adds nothing: the GPU is already busy.
// The GPU's idle and TDP are its datasheet figures (core/gpu.cc).
// Energy per step = watts * step time * GPUs.
//
//   double w = WattsPerGpu(gpu, 0.8, 0.15, 0.05, calibration);
//   double tpj = TokensPerJoule(tokens_per_step, w, step_s, gpus);
#pragma once

#include <cstdint>

#include "core/gpu.h"
#include "costmodel/calibration/calibration.h"

namespace tessera::costmodel {

// The whole training run for the workload's token budget.
struct FullRunPrediction {
  double days = 0;
  double energy_mwh = 0;
  double gpu_hours = 0;
};

double WattsPerGpu(const GpuSpec& gpu, double compute_busy_fraction,
                   double exposed_comm_busy_fraction,
                   double pipeline_wait_busy_fraction,
                   const Calibration& calibration);

// Tokens per joule of the whole cluster.
double TokensPerJoule(double tokens_per_step, double watts_per_gpu,
                      double step_time_s, int64_t gpus);

// The whole run: total_tokens at tokens_per_s on `gpus` GPUs drawing
// watts_per_gpu: days, MWh (1 MWh = 3.6e9 J) and GPU-hours.
FullRunPrediction PredictFullRun(double total_tokens, double tokens_per_s,
                                 double watts_per_gpu, int64_t gpus);

}  // namespace tessera::costmodel
