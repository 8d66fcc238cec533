#include "executor/cuda/gpu_peak.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/gpu.h"

namespace tessera::executor {
namespace {

// A device whose name contains every word of `all` and none of `none`
// (upper case) has this peak. Checked in order: the first match wins, so
// the PCIe and NVL variants come before the SXM part of the same chip.
struct PeakRule {
  std::vector<const char*> all;
  std::vector<const char*> none;
  const char* preset;  // core/gpu.h preset, or nullptr
  double tflops;       // when preset is nullptr
  const char* source;
};

const std::vector<PeakRule>& Rules() {
  static const std::vector<PeakRule>* rules = new std::vector<PeakRule>{
      // NVIDIA H100 datasheet: PCIe 756 TFLOP/s dense BF16; NVL 835.
      {{"H100", "PCIE"},
       {},
       nullptr,
       756.0,
       "NVIDIA H100 datasheet, PCIe: 756 TFLOP/s dense BF16"},
      {{"H100", "NVL"},
       {},
       nullptr,
       835.0,
       "NVIDIA H100 datasheet, NVL: 835 TFLOP/s dense BF16"},
      // NVIDIA H200 datasheet: H200 NVL 835.5 TFLOP/s dense BF16.
      {{"H200", "NVL"},
       {},
       nullptr,
       835.5,
       "NVIDIA H200 datasheet, NVL: 835.5 TFLOP/s dense BF16"},
      {{"H200"}, {}, "h200-sxm", 0, nullptr},
      // GH200 datasheet: the Hopper GPU at H100 SXM's 989 TFLOP/s.
      {{"GH200"}, {}, "h100-sxm", 0, nullptr},
      {{"H100"}, {}, "h100-sxm", 0, nullptr},  // "H100 80GB HBM3" is SXM5
      // NVIDIA A100 datasheet: 312 TFLOP/s dense BF16, PCIe and SXM alike.
      {{"A100", "80GB"}, {}, "a100-sxm-80g", 0, nullptr},
      {{"A100"}, {}, "a100-sxm-40g", 0, nullptr},
      // NVIDIA L40S datasheet: 362.05 TFLOP/s dense BF16.
      {{"L40S"},
       {},
       nullptr,
       362.05,
       "NVIDIA L40S datasheet: 362.05 TFLOP/s dense BF16"},
      // NVIDIA L4 datasheet: 121 TFLOP/s dense BF16.
      {{"L4"},
       {"L40"},
       nullptr,
       121.0,
       "NVIDIA L4 datasheet: 121 TFLOP/s dense BF16"},
      // NVIDIA A10 datasheet: 125 TFLOP/s dense BF16.
      {{"A10"},
       {"A100", "A10G"},
       nullptr,
       125.0,
       "NVIDIA A10 datasheet: 125 TFLOP/s dense BF16"},
  };
  return *rules;
}

bool Matches(const PeakRule& rule, const std::string& upper) {
  for (const char* word : rule.all) {
    if (!absl::StrContains(upper, word)) return false;
  }
  for (const char* word : rule.none) {
    if (absl::StrContains(upper, word)) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<GpuPeak> DenseBf16PeakForDevice(absl::string_view device_name) {
  const std::string upper = absl::AsciiStrToUpper(device_name);
  for (const PeakRule& rule : Rules()) {
    if (!Matches(rule, upper)) continue;
    if (rule.preset == nullptr) return GpuPeak{rule.tflops, rule.source};
    absl::StatusOr<GpuSpec> spec = GpuPreset(rule.preset);
    if (!spec.ok()) return spec.status();
    return GpuPeak{spec->peak_dense_tflops,
                   absl::StrCat("datasheet dense bf16 peak of core/gpu.h "
                                "preset ",
                                rule.preset, " for '", device_name, "'")};
  }
  return absl::NotFoundError(absl::StrCat(
      "no dense bf16 peak is known for device '", device_name, "'"));
}

}  // namespace tessera::executor
