// The agent's energy counters of a command trial's GPUs, against the fake
// libnvidia-ml (tests/executor/cuda/fake_nvml.cc, one device at the bus id
// FAKE_NVML_BUS_ID): the GPUs are found by PCI bus id, so a trial's GPU is
// read whatever NVML numbers it, and a GPU that is not there is "power not
// measured", never another device's counter. The bus ids of the trial's
// GPUs come from the CUDA driver in CUDA's order (a fake libcuda,
// fake_libcuda.cc).
#include "agents/gpu_energy.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "agents/cuda_devices.h"
#include "gtest/gtest.h"

namespace tessera::agents {
namespace {

constexpr const char* kFake = TESSERA_FAKE_NVML_LIBRARY;

class GpuEnergyCountersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("FAKE_NVML_BUS_ID", "0000:3B:00.0", 1);
    setenv("FAKE_NVML_START_MJ", "5000", 1);
    setenv("FAKE_NVML_STEP_MJ", "1000", 1);
  }
  void TearDown() override {
    unsetenv("FAKE_NVML_BUS_ID");
    unsetenv("FAKE_NVML_START_MJ");
    unsetenv("FAKE_NVML_STEP_MJ");
  }
};

TEST_F(GpuEnergyCountersTest, ReadsTheGpuWithTheTrialsBusId) {
  absl::StatusOr<std::unique_ptr<GpuEnergyCounters>> gpus =
      GpuEnergyCounters::Open({"0000:3B:00.0"}, kFake);
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  EXPECT_EQ((*gpus)->gpus(), 1);
  // Open read 5000 mJ; each read moves the counter on by 1000 mJ.
  absl::StatusOr<double> first = (*gpus)->TotalJoules();
  absl::StatusOr<double> second = (*gpus)->TotalJoules();
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_DOUBLE_EQ(*first, 6.0);
  EXPECT_DOUBLE_EQ(*second - *first, 1.0);
}

// A trial whose GPU NVML does not have (another bus id than the fake's one
// device, as NVML's device 0 is not CUDA's device 0 under
// CUDA_VISIBLE_DEVICES): not measured, rather than some other GPU's joules.
TEST_F(GpuEnergyCountersTest, AGpuNvmlDoesNotHaveIsNotMeasured) {
  absl::StatusOr<std::unique_ptr<GpuEnergyCounters>> gpus =
      GpuEnergyCounters::Open({"0000:3B:00.0", "0000:AF:00.0"}, kFake);
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(gpus.status().message())
                .find("power not measured: no NVML device has PCI bus id "
                      "0000:AF:00.0"),
            std::string::npos)
      << gpus.status();
}

TEST_F(GpuEnergyCountersTest, NoGpuOrNoNvmlIsNotMeasured) {
  EXPECT_EQ(GpuEnergyCounters::Open({}, kFake).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GpuEnergyCounters::Open({"0000:3B:00.0"}, "libno-such-nvml.so.1")
                .status()
                .code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tessera::agents

namespace tessera::agents {
namespace {

constexpr const char* kFakeCuda = TESSERA_FAKE_CUDA_LIBRARY;

// A trial's local rank i runs on CUDA device i: its bus id is the one the
// driver gives ordinal i, whatever the GPUs' order on the machine (here an
// agent that sees the machine's GPU at 0000:AF:00.0 first).
TEST(VisibleGpuPciBusIdsTest, InCudasOrder) {
  setenv("FAKE_CUDA_BUS_IDS", "0000:AF:00.0,0000:3B:00.0,0000:5D:00.0", 1);
  absl::StatusOr<std::vector<std::string>> ids =
      VisibleGpuPciBusIds(2, kFakeCuda);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(*ids, (std::vector<std::string>{"0000:AF:00.0", "0000:3B:00.0"}));
  unsetenv("FAKE_CUDA_BUS_IDS");
}

TEST(VisibleGpuPciBusIdsTest, FewerDevicesThanRanksOrNoDriverIsNotFound) {
  setenv("FAKE_CUDA_BUS_IDS", "0000:3B:00.0", 1);
  absl::StatusOr<std::vector<std::string>> ids =
      VisibleGpuPciBusIds(2, kFakeCuda);
  EXPECT_EQ(ids.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(
      std::string(ids.status().message()).find("1 devices visible, 2 wanted"),
      std::string::npos)
      << ids.status();
  setenv("FAKE_CUDA_INIT_ERROR", "100", 1);  // CUDA_ERROR_NO_DEVICE
  EXPECT_EQ(VisibleGpuPciBusIds(1, kFakeCuda).status().code(),
            absl::StatusCode::kNotFound);
  unsetenv("FAKE_CUDA_INIT_ERROR");
  unsetenv("FAKE_CUDA_BUS_IDS");
  EXPECT_EQ(VisibleGpuPciBusIds(1, "libno-such-cuda.so.1").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tessera::agents
