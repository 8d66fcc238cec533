// Dense bf16 peaks by the names the CUDA runtime reports, against the
// datasheet figures (core/gpu.h presets where they exist).
#include "executor/cuda/gpu_peak.h"

#include <string>

#include "gtest/gtest.h"

namespace tessera::executor {
namespace {

double PeakOf(const std::string& name) {
  absl::StatusOr<GpuPeak> p = DenseBf16PeakForDevice(name);
  EXPECT_TRUE(p.ok()) << name << ": " << p.status();
  return p.ok() ? p->tflops : -1;
}

TEST(GpuPeakTest, KnownDevices) {
  EXPECT_DOUBLE_EQ(PeakOf("NVIDIA H100 80GB HBM3"), 989.4);  // SXM5
  EXPECT_DOUBLE_EQ(PeakOf("NVIDIA H100 PCIe"), 756.0);
  EXPECT_DOUBLE_EQ(PeakOf("NVIDIA H100 NVL"), 835.0);
  EXPECT_DOUBLE_EQ(PeakOf("NVIDIA H200"), 989.4);
  EXPECT_DOUBLE_EQ(PeakOf("NVIDIA H200 NVL"), 835.5);
  EXPECT_DOUBLE_EQ(PeakOf("NVIDIA GH200 480GB"), 989.4);
  EXPECT_DOUBLE_EQ(PeakOf("NVIDIA A100-SXM4-80GB"), 312.0);
  EXPECT_DOUBLE_EQ(PeakOf("NVIDIA A100-PCIE-40GB"), 312.0);
  EXPECT_DOUBLE_EQ(PeakOf("NVIDIA L40S"), 362.05);
  EXPECT_DOUBLE_EQ(PeakOf("NVIDIA L4"), 121.0);
  EXPECT_DOUBLE_EQ(PeakOf("NVIDIA A10"), 125.0);
  EXPECT_DOUBLE_EQ(PeakOf("nvidia h100 80gb hbm3"), 989.4);  // any case
}

TEST(GpuPeakTest, SourceNamesThePresetOrDatasheet) {
  absl::StatusOr<GpuPeak> sxm = DenseBf16PeakForDevice("NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(sxm.ok());
  EXPECT_NE(sxm->source.find("h100-sxm"), std::string::npos) << sxm->source;
  absl::StatusOr<GpuPeak> pcie = DenseBf16PeakForDevice("NVIDIA H100 PCIe");
  ASSERT_TRUE(pcie.ok());
  EXPECT_NE(pcie->source.find("datasheet"), std::string::npos) << pcie->source;
}

TEST(GpuPeakTest, UnknownDevicesAreNotFound) {
  for (const char* name : {"NVIDIA GeForce RTX 4090", "Tesla V100-SXM2-32GB",
                           "NVIDIA A10G", "NVIDIA L40", ""}) {
    absl::StatusOr<GpuPeak> p = DenseBf16PeakForDevice(name);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kNotFound) << name;
    EXPECT_NE(std::string(p.status().message()).find(name), std::string::npos);
  }
}

}  // namespace
}  // namespace tessera::executor
