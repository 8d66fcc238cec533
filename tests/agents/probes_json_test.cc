#include "agents/probes.h"
#include "gtest/gtest.h"

namespace tessera::agents {
namespace {

TEST(ProbesJsonTest, ReadsEveryProbe) {
  absl::StatusOr<std::vector<v1::Probe>> probes = ParseProbesJson(R"({
    "probes": [
      {"kind": "gemm_f32", "group_size": 1, "bytes": 0, "value": 0.25,
       "unit": "TFLOP/s"},
      {"kind": "allreduce", "group_size": 4, "bytes": 16777216,
       "value": 12.5, "unit": "GB/s"}]})");
  ASSERT_TRUE(probes.ok()) << probes.status();
  ASSERT_EQ(probes->size(), 2u);
  EXPECT_EQ((*probes)[0].kind(), "gemm_f32");
  EXPECT_EQ((*probes)[0].unit(), "TFLOP/s");
  EXPECT_DOUBLE_EQ((*probes)[0].value(), 0.25);
  EXPECT_EQ((*probes)[1].group_size(), 4);
  EXPECT_EQ((*probes)[1].bytes(), 16777216);
}

TEST(ProbesJsonTest, AnErrorWithoutProbesIsUnavailable) {
  absl::StatusOr<std::vector<v1::Probe>> probes = ParseProbesJson(
      R"({"probes": [], "error": "backend: 'cuda' probes are not part of this build"})");
  ASSERT_FALSE(probes.ok());
  EXPECT_EQ(probes.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(probes.status().message().find("not part of this build"),
            std::string::npos);
}

TEST(ProbesJsonTest, MalformedNamesTheField) {
  absl::StatusOr<std::vector<v1::Probe>> probes = ParseProbesJson(R"({
    "probes": [
      {"kind": "gemm_f32", "group_size": 1, "bytes": 0, "value": 1, "unit": "TFLOP/s"},
      {"kind": "allgather", "group_size": 2, "bytes": 8, "value": "fast",
       "unit": "GB/s"}]})");
  ASSERT_FALSE(probes.ok());
  EXPECT_EQ(probes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(probes.status().message().rfind("probes[1].value: ", 0), 0u)
      << probes.status();
  EXPECT_FALSE(ParseProbesJson("not json").ok());
  EXPECT_FALSE(ParseProbesJson(R"({"probes": {}})").ok());
  EXPECT_FALSE(ParseProbesJson(
                   R"({"probes": [{"kind": "x", "group_size": 0, "bytes": 0,
                                   "value": 1, "unit": "GB/s"}]})")
                   .ok());
}

}  // namespace
}  // namespace tessera::agents
