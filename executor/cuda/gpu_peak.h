// The dense bf16 tensor-core peak that MFU divides by, looked up by the name
// the CUDA runtime reports for a device (cudaDeviceProp::name). SXM parts that
// core/gpu.h has presets for take the preset's figure; other data-center
// parts come from a table here with the datasheet it cites. Unknown names are
// NOT_FOUND: the trial then measures a bf16 GEMM and says so (an achievable
// rate, not a peak).
//
//   absl::StatusOr<GpuPeak> peak = DenseBf16PeakForDevice("NVIDIA H100 80GB
//   HBM3");
//   // peak->tflops == 989.4, peak->source == "core/gpu.h preset h100-sxm ..."
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tessera::executor {

struct GpuPeak {
  double tflops = 0;   // dense bf16, per GPU
  std::string source;  // where the figure comes from, for TrialResult
};

// Matches the name case-insensitively (see gpu_peak.cc for the patterns);
// NOT_FOUND names the device when nothing matches.
absl::StatusOr<GpuPeak> DenseBf16PeakForDevice(absl::string_view device_name);

}  // namespace tessera::executor
