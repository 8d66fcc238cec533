#include "core/gpu.h"

#include <array>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/known_names.h"

namespace tessera {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// Sources, per GPU (dense fp8 peaks: the same datasheets, without sparsity):
// - h100-sxm: NVIDIA H100 Tensor Core GPU datasheet (SXM5): 989.4 TFLOP/s
//   dense BF16, 1978.9 dense FP8, 80 GB HBM3 (81559 MiB reported by nvidia-smi), 3.35 TB/s,
//   NVLink 4 900 GB/s bidirectional, 700 W. DGX H100: 8x ConnectX-7 400 Gb/s
//   per node = 400 GB/s. Idle ~70 W (nvidia-smi on idle SXM5 boards).
// - h100-sxm-96g-500w: the H100 of Meta's Grand Teton hosts that torchtitan
//   benchmarks on (torchtitan benchmarks/llama3_h100_202412_torchtitan.md):
//   96 GB HBM2e at 2.4 TB/s, a 500 W power limit, 400 Gb/s RDMA per GPU.
//   No sustained clock at 500 W is published: the peaks are the SXM part's
//   scaled by 0.85, chosen against torchtitan's bf16 rows of
//   tests/data/measured_published.json (a fit, not a datasheet figure).
//   Memory taken as 96e9 bytes (89.4 GiB), the smaller reading of "96 GB".
// - h200-sxm: NVIDIA H200 datasheet: same compute as H100, 141 GB HBM3e
//   (143771 MiB reported), 4.8 TB/s, NVLink 900 GB/s, 700 W; DGX H200 NICs as
//   DGX H100. Idle ~75 W.
// - a100-sxm-80g / -40g: NVIDIA A100 datasheet: 312 TFLOP/s dense BF16, 80 GB
//   HBM2e at 2.039 TB/s (81920 MiB) / 40 GB HBM2 at 1.555 TB/s (40960 MiB),
//   NVLink 3 600 GB/s bidirectional, 400 W. DGX A100: 8x HDR 200 Gb/s per node
//   = 200 GB/s. Idle ~55 W.
// - v100-sxm-32g: NVIDIA V100 datasheet: 125 TFLOP/s FP16 tensor (no BF16),
//   32 GB HBM2 (32768 MiB) at 900 GB/s, NVLink 2 300 GB/s bidirectional, 300 W.
//   DGX-2: 8x EDR 100 Gb/s per node = 100 GB/s. Idle ~40 W.
const std::array<GpuSpec, 6>& Presets() {
  // name, bf16, fp8, memory, HBM, NVLink, NICs per node, TDP, idle, arch.
  static const std::array<GpuSpec, 6> presets = {{
      {"h100-sxm", 989.4, 1978.9, 81559 * kMiB, 3350, 450, 400, 700, 70,
       "hopper"},
      {"h100-sxm-96g-500w", 989.4 * 0.85, 1978.9 * 0.85, 96000000000, 2400,
       450, 400, 500, 70, "hopper"},
      {"h200-sxm", 989.4, 1978.9, 143771 * kMiB, 4800, 450, 400, 700, 75,
       "hopper"},
      {"a100-sxm-80g", 312, 0, 81920 * kMiB, 2039, 300, 200, 400, 55,
       "ampere"},
      {"a100-sxm-40g", 312, 0, 40960 * kMiB, 1555, 300, 200, 400, 55,
       "ampere"},
      {"v100-sxm-32g", 125, 0, 32768 * kMiB, 900, 150, 100, 300, 40, "volta"},
  }};
  return presets;
}

}  // namespace

const std::vector<std::string>& KnownArchitectures() {
  static const std::vector<std::string>* names = new std::vector<std::string>{
      "volta", "ampere", "hopper", "blackwell", "cpu"};
  return *names;
}

bool IsKnownArchitecture(absl::string_view architecture) {
  if (architecture.empty()) return true;
  for (const std::string& name : KnownArchitectures()) {
    if (architecture == name) return true;
  }
  return false;
}

absl::Status ValidateGpu(const GpuSpec& g) {
  const std::pair<const char*, double> figures[] = {
      {"peak_dense_tflops", g.peak_dense_tflops},
      {"memory_bytes", static_cast<double>(g.memory_bytes)},
      {"hbm_gbs", g.hbm_gbs},
      {"nvlink_gbs", g.nvlink_gbs},
      {"inter_node_gbs", g.inter_node_gbs},
      {"tdp_w", g.tdp_w}};
  for (const auto& [field, value] : figures) {
    if (!(value > 0) || !std::isfinite(value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gpu.", field, ": must be positive and finite, got ", value));
    }
  }
  if (!IsKnownArchitecture(g.architecture)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gpu.architecture: '", g.architecture, "' is not one of ",
        absl::StrJoin(KnownArchitectures(), ", "), " or empty (unknown)"));
  }
  if (!(g.peak_fp8_tflops >= 0) || !std::isfinite(g.peak_fp8_tflops)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpu.peak_fp8_tflops: must be zero (no fp8) or positive "
                     "and finite, got ",
                     g.peak_fp8_tflops));
  }
  if (!(g.idle_w >= 0 && g.idle_w < g.tdp_w) || !std::isfinite(g.idle_w)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gpu.idle_w: must be in [0, tdp_w=", g.tdp_w, "), got ", g.idle_w));
  }
  return absl::OkStatus();
}

absl::StatusOr<GpuSpec> GpuPreset(absl::string_view name) {
  for (const GpuSpec& g : Presets()) {
    if (absl::EqualsIgnoreCase(name, g.name)) return g;
  }
  return absl::NotFoundError(absl::StrCat(
      "gpu: ", UnknownNameMessage("preset", name, GpuPresetNames())));
}

std::vector<std::string> GpuPresetNames() {
  std::vector<std::string> names;
  for (const GpuSpec& g : Presets()) names.push_back(g.name);
  return names;
}

}  // namespace tessera
