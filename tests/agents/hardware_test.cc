#include "agents/hardware.h"

#include <unistd.h>

#include "agents/cuda_devices.h"
#include "core/usable_cpus.h"
#include "gtest/gtest.h"

namespace tessera::agents {
namespace {

TEST(HardwareTest, CpuModelFromX86Cpuinfo) {
  const char* cpuinfo =
      "processor\t: 0\n"
      "vendor_id\t: GenuineIntel\n"
      "model name\t: Intel(R) Xeon(R) Platinum 8480+\n"
      "flags\t\t: fpu vme: de\n"
      "\n"
      "processor\t: 1\n"
      "model name\t: Intel(R) Xeon(R) Platinum 8480+\n";
  EXPECT_EQ(CpuModelFromCpuinfo(cpuinfo), "Intel(R) Xeon(R) Platinum 8480+");
}

TEST(HardwareTest, CpuModelFromArmCpuinfoAndNothing) {
  EXPECT_EQ(CpuModelFromCpuinfo("processor : 0\nBogoMIPS : 50.00\n"
                                "Hardware : NVIDIA Grace\n"),
            "NVIDIA Grace");
  EXPECT_EQ(CpuModelFromCpuinfo(""), "cpu");
  EXPECT_EQ(CpuModelFromCpuinfo("model name :   \n"), "cpu");
}

TEST(HardwareTest, MemTotalInBytes) {
  const char* meminfo =
      "MemTotal:       16303084 kB\n"
      "MemFree:         1000000 kB\n";
  absl::StatusOr<int64_t> bytes = MemTotalBytesFromMeminfo(meminfo);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, int64_t{16303084} * 1024);
  EXPECT_FALSE(MemTotalBytesFromMeminfo("MemFree: 1 kB\n").ok());
  EXPECT_FALSE(MemTotalBytesFromMeminfo("MemTotal: lots kB\n").ok());
}

TEST(HardwareTest, DefaultCpuRanksAtLeastTwo) {
  EXPECT_GE(DefaultCpuRanks(), 2);
  EXPECT_GE(DefaultCpuRanks(), int64_t{UsableCpuCount()});
}

TEST(HardwareTest, ForcedCpuSplitsThisHostsMemory) {
  HardwareOptions options;
  options.backend = "cpu";
  options.cpu_ranks = 3;
  absl::StatusOr<Hardware> hw = DetectHardware(options);
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_EQ(hw->backend, "cpu");
  EXPECT_EQ(hw->ranks, 3);
  EXPECT_EQ(hw->interconnect, "shared-memory");
  EXPECT_EQ(hw->driver, "");
  EXPECT_FALSE(hw->device_name.empty());
  // An independent reading of the same total: sysinfo's pages.
  const int64_t total = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) *
                        static_cast<int64_t>(sysconf(_SC_PAGESIZE));
  EXPECT_NEAR(static_cast<double>(hw->memory_bytes),
              static_cast<double>(total / 3), 4096.0);
}

// On this machine: cuda when a driver and a GPU are present, else cpu with
// a note that says why, never an error.
TEST(HardwareTest, AutoOnThisMachine) {
  absl::StatusOr<Hardware> hw = DetectHardware(HardwareOptions{});
  ASSERT_TRUE(hw.ok()) << hw.status();
  absl::StatusOr<CudaDevices> gpus = DetectCudaDevices();
  if (gpus.ok()) {
    EXPECT_EQ(hw->backend, "cuda");
    EXPECT_EQ(hw->ranks, gpus->count);
    EXPECT_GT(hw->memory_bytes, 0);
    EXPECT_FALSE(hw->driver.empty());
    EXPECT_TRUE(hw->interconnect == "nvlink" || hw->interconnect == "pcie");
    EXPECT_EQ(hw->note, "");
  } else {
    EXPECT_EQ(hw->backend, "cpu");
    EXPECT_EQ(hw->ranks, DefaultCpuRanks());
    EXPECT_NE(hw->note.find("CUDA"), std::string::npos) << hw->note;
    EXPECT_NE(hw->note.find("using the cpu backend"), std::string::npos);
  }
}

TEST(HardwareTest, ForcedCudaWithoutAGpuIsAnError) {
  if (DetectCudaDevices().ok()) GTEST_SKIP() << "this machine has a GPU";
  HardwareOptions options;
  options.backend = "cuda";
  absl::StatusOr<Hardware> hw = DetectHardware(options);
  ASSERT_FALSE(hw.ok());
  EXPECT_EQ(hw.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(hw.status().message().find("--backend"), std::string::npos);
}

TEST(HardwareTest, BadOptionsNameTheFlag) {
  HardwareOptions options;
  options.backend = "tpu";
  absl::StatusOr<Hardware> hw = DetectHardware(options);
  ASSERT_FALSE(hw.ok());
  EXPECT_NE(hw.status().message().find("--backend: 'tpu'"), std::string::npos);
  // A trial backend that is not hardware (the agent's trials run the
  // study's command on whatever the host has: auto).
  options.backend = "command";
  hw = DetectHardware(options);
  ASSERT_FALSE(hw.ok());
  EXPECT_EQ(hw.status().message(),
            "--backend: 'command' is not auto, cuda or cpu");
  options.backend = "cpu";
  options.cpu_ranks = 0;
  hw = DetectHardware(options);
  ASSERT_FALSE(hw.ok());
  EXPECT_NE(hw.status().message().find("--cpu-ranks"), std::string::npos);
}

}  // namespace
}  // namespace tessera::agents
