// Power from NVML's energy counter, on the CPU: the average-watts arithmetic
// (hand values, a wrapped counter, a reset counter), and NvmlPowerMeter's
// dlopen path against a fake libnvidia-ml (fake_nvml.cc) and against
// libraries that are missing or are not NVML: never a made-up number.
#include "executor/cuda/nvml_power.h"

#include <cstdlib>
#include <limits>
#include <string>

#include "gtest/gtest.h"

namespace tessera::executor {
namespace {

TEST(AverageWattsTest, HandValues) {
  // 700 J over 2 s = 350 W.
  absl::StatusOr<double> w = AverageWatts(1'000'000, 1'700'000, 2.0);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_DOUBLE_EQ(*w, 350.0);
  absl::StatusOr<double> idle = AverageWatts(5, 5, 1.0);
  ASSERT_TRUE(idle.ok());
  EXPECT_DOUBLE_EQ(*idle, 0.0);
}

TEST(AverageWattsTest, AWrappedCounterStillGivesTheEnergy) {
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  // From 500 mJ below the wrap to 1500 past it: 2001 mJ (max + 1 = 0).
  absl::StatusOr<double> w = AverageWatts(max - 500, 1500, 1.0);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_DOUBLE_EQ(*w, 2.001);
}

TEST(AverageWattsTest, AResetCounterIsNotAPower) {
  // Backwards by 4000 mJ reads as a wrap of 2^64 - 4000 mJ: ~1.8e16 W.
  absl::StatusOr<double> w = AverageWatts(5000, 1000, 10.0);
  EXPECT_EQ(w.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(w.status().message()).find("counter reset"),
            std::string::npos)
      << w.status();
  // More than kMaxPlausibleWatts forward in a short window: also a reset.
  EXPECT_FALSE(AverageWatts(0, 20'000'000, 1.0).ok());
  EXPECT_TRUE(AverageWatts(0, 9'000'000, 1.0).ok());
}

TEST(AverageWattsTest, TheWindowMustLast) {
  EXPECT_EQ(AverageWatts(0, 10, 0.0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AverageWatts(0, 10, -1.0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AverageWatts(0, 10, std::numeric_limits<double>::infinity())
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

class NvmlPowerMeterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v :
         {"FAKE_NVML_INIT_ERROR", "FAKE_NVML_BUS_ID", "FAKE_NVML_START_MJ",
          "FAKE_NVML_STEP_MJ", "FAKE_NVML_UNSUPPORTED"}) {
      unsetenv(v);
    }
    setenv("FAKE_NVML_BUS_ID", "0000:3B:00.0", 1);
  }
  const char* fake_ = TESSERA_FAKE_NVML_LIBRARY;
};

TEST_F(NvmlPowerMeterTest, ReadsTheDevicesCounter) {
  setenv("FAKE_NVML_START_MJ", "5000", 1);
  setenv("FAKE_NVML_STEP_MJ", "250", 1);
  absl::StatusOr<std::unique_ptr<NvmlPowerMeter>> meter =
      NvmlPowerMeter::Open("0000:3B:00.0", fake_);
  ASSERT_TRUE(meter.ok()) << meter.status();
  // Open read the counter once (5000); the next reads continue from there.
  absl::StatusOr<uint64_t> a = (*meter)->EnergyMillijoules();
  absl::StatusOr<uint64_t> b = (*meter)->EnergyMillijoules();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, 5250u);
  EXPECT_EQ(*b, 5500u);
  absl::StatusOr<double> w = AverageWatts(*a, *b, 0.5);
  ASSERT_TRUE(w.ok());
  EXPECT_DOUBLE_EQ(*w, 0.5);  // 250 mJ in 0.5 s
  EXPECT_NE((*meter)->description().find("0000:3B:00.0"), std::string::npos);
}

TEST_F(NvmlPowerMeterTest, OtherBusIdIsNotFound) {
  absl::StatusOr<std::unique_ptr<NvmlPowerMeter>> meter =
      NvmlPowerMeter::Open("0000:AF:00.0", fake_);
  EXPECT_EQ(meter.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(
      std::string(meter.status().message()).rfind("power not measured: ", 0),
      0u)
      << meter.status();
  EXPECT_NE(std::string(meter.status().message()).find("0000:AF:00.0"),
            std::string::npos);
}

TEST_F(NvmlPowerMeterTest, UnsupportedCounterIsNotMeasured) {
  setenv("FAKE_NVML_UNSUPPORTED", "1", 1);
  absl::StatusOr<std::unique_ptr<NvmlPowerMeter>> meter =
      NvmlPowerMeter::Open("0000:3B:00.0", fake_);
  EXPECT_EQ(meter.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(std::string(meter.status().message()).find("Not Supported"),
            std::string::npos)
      << meter.status();
}

TEST_F(NvmlPowerMeterTest, FailedInitIsUnavailable) {
  setenv("FAKE_NVML_INIT_ERROR", "9", 1);
  absl::StatusOr<std::unique_ptr<NvmlPowerMeter>> meter =
      NvmlPowerMeter::Open("0000:3B:00.0", fake_);
  EXPECT_EQ(meter.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(std::string(meter.status().message()).find("nvmlInit_v2"),
            std::string::npos)
      << meter.status();
}

TEST_F(NvmlPowerMeterTest, MissingLibraryIsNotMeasured) {
  absl::StatusOr<std::unique_ptr<NvmlPowerMeter>> meter =
      NvmlPowerMeter::Open("0000:3B:00.0", "/nonexistent/libnvidia-ml.so.1");
  EXPECT_EQ(meter.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(
      std::string(meter.status().message()).rfind("power not measured: ", 0),
      0u)
      << meter.status();
}

TEST_F(NvmlPowerMeterTest, ALibraryWithoutNvmlIsNotMeasured) {
  absl::StatusOr<std::unique_ptr<NvmlPowerMeter>> meter =
      NvmlPowerMeter::Open("0000:3B:00.0", "libm.so.6");
  EXPECT_EQ(meter.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(std::string(meter.status().message()).find("has no nvmlInit_v2"),
            std::string::npos)
      << meter.status();
}

TEST_F(NvmlPowerMeterTest, TheRealLibraryEitherWorksOrSaysWhyNot) {
  // Where the driver is installed this opens (or finds no such bus id);
  // elsewhere the library is missing. Either way: no invented figure.
  absl::StatusOr<std::unique_ptr<NvmlPowerMeter>> meter =
      NvmlPowerMeter::Open("0000:00:00.0");
  if (!meter.ok()) {
    EXPECT_EQ(
        std::string(meter.status().message()).rfind("power not measured: ", 0),
        0u)
        << meter.status();
  }
}

}  // namespace
}  // namespace tessera::executor
