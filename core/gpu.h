// A GPU model's datasheet figures, as the cost model uses them, and presets.
//
//   absl::StatusOr<GpuSpec> gpu = GpuPreset("h100-sxm");
//   double peak = gpu->peak_dense_tflops;  // 989.4
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tessera {

// Bandwidths are unidirectional (what one direction of a link carries), in
// GB/s = 1e9 bytes/s, as NCCL's bus bandwidth is stated.
struct GpuSpec {
  std::string name;
  double peak_dense_tflops = 0;  // dense bf16 tensor-core peak (fp16 on V100)
  double peak_fp8_tflops = 0;    // dense fp8 tensor-core peak; 0 = no fp8
  int64_t memory_bytes = 0;      // device memory as the driver reports it
  double hbm_gbs = 0;            // device memory bandwidth
  double nvlink_gbs = 0;         // NVLink bandwidth per GPU, one direction
  double inter_node_gbs = 0;  // typical NIC bandwidth per node, one direction
  double tdp_w = 0;           // board power limit
  double idle_w = 0;          // typical idle power
  // The tensor-core generation ("volta", "ampere", "hopper"; "" = unknown):
  // training stacks' kernel efficiencies differ by generation
  // (costmodel/stacks).
  std::string architecture = {};
};

// The architectures a GpuSpec may name: volta, ampere, hopper, blackwell, and
// cpu (the agents' CPU ranks).
const std::vector<std::string>& KnownArchitectures();
// True for a known architecture or "" (unknown).
bool IsKnownArchitecture(absl::string_view architecture);

// Checks that every figure is positive (idle below TDP, the fp8 peak zero or
// positive); errors name the field as "gpu.<field>".
absl::Status ValidateGpu(const GpuSpec& gpu);

// h100-sxm, h100-sxm-96g-500w, h200-sxm, a100-sxm-80g, a100-sxm-40g,
// v100-sxm-32g. NotFound names the preset and lists the known ones.
// The presets are data: core/presets/gpus.json, compiled in (each figure
// with its source there).
absl::StatusOr<GpuSpec> GpuPreset(absl::string_view name);
std::vector<std::string> GpuPresetNames();

// Parses a GPU presets file's text (core/presets/gpus.json's format): every
// entry's fields known, present and valid (ValidateGpu), names unique.
// INVALID_ARGUMENT naming `file`, the entry and the field.
absl::StatusOr<std::vector<GpuSpec>> ParseGpuPresets(const std::string& file,
                                                     absl::string_view text);

}  // namespace tessera
