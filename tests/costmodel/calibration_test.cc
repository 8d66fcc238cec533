#include "costmodel/calibration/calibration.h"

#include <set>

#include "gtest/gtest.h"

namespace tessera::costmodel {
namespace {

TEST(CalibrationTest, EveryCoefficientIsDocumentedAndInRange) {
  const std::vector<CoefficientInfo>& infos = Calibration::Infos();
  ASSERT_GE(infos.size(), 10u);
  std::set<std::string> names;
  const Calibration defaults;
  for (const CoefficientInfo& info : infos) {
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_FALSE(info.source.empty()) << info.name;
    EXPECT_LE(info.min_value, info.default_value) << info.name;
    EXPECT_LE(info.default_value, info.max_value) << info.name;
    // The field and its info agree.
    absl::StatusOr<double> value = defaults.Get(info.name);
    ASSERT_TRUE(value.ok()) << info.name;
    EXPECT_EQ(*value, info.default_value) << info.name;
  }
}

TEST(CalibrationTest, SetChangesTheFieldTheModelReads) {
  Calibration c;
  ASSERT_TRUE(c.Set("fsdp_overlap_efficiency", 0.7).ok());
  EXPECT_EQ(c.fsdp_overlap_efficiency, 0.7);
  EXPECT_EQ(*c.Get("fsdp_overlap_efficiency"), 0.7);
  ASSERT_TRUE(c.Set("gemm_peak_efficiency", 0.65).ok());
  EXPECT_EQ(c.gemm_peak_efficiency, 0.65);
}

TEST(CalibrationTest, RejectsUnknownNamesAndValuesOutOfRange) {
  Calibration c;
  EXPECT_EQ(c.Get("no_such_coefficient").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(c.Set("no_such_coefficient", 1).code(),
            absl::StatusCode::kNotFound);
  const absl::Status s = c.Set("gemm_peak_efficiency", 1.5);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("calibration.gemm_peak_efficiency"),
            absl::string_view::npos);
  EXPECT_FALSE(c.Set("gemm_peak_efficiency", std::nan("")).ok());
  EXPECT_EQ(c.gemm_peak_efficiency, Calibration{}.gemm_peak_efficiency);
}

}  // namespace
}  // namespace tessera::costmodel
