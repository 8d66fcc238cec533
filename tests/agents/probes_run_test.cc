#include <string>

#include "agents/files.h"
#include "agents/probes.h"
#include "gtest/gtest.h"

namespace tessera::agents {
namespace {

// The real tessera-trial --probe on this host's CPU.
TEST(ProbesRunTest, CpuProbesOfTheRealBinary) {
  absl::StatusOr<std::string> dir =
      MakeUniqueDirectory(::testing::TempDir(), "probes-");
  ASSERT_TRUE(dir.ok());
  ProbeOptions options;
  options.trial_binary = TESSERA_TRIAL_BINARY;
  options.backend = "cpu";
  options.ranks = 2;
  options.work_dir = *dir;
  options.time_limit = absl::Seconds(120);
  absl::StatusOr<std::vector<v1::Probe>> probes = RunProbes(options, nullptr);
  ASSERT_TRUE(probes.ok()) << probes.status();
  bool gemm = false, allreduce_pair = false;
  for (const v1::Probe& p : *probes) {
    EXPECT_GT(p.value(), 0) << p.kind();
    EXPECT_LE(p.group_size(), 2) << p.kind();
    gemm |= p.kind() == "gemm_f32" && p.unit() == "TFLOP/s";
    allreduce_pair |=
        p.kind() == "allreduce" && p.group_size() == 2 && p.unit() == "GB/s";
  }
  EXPECT_TRUE(gemm);
  EXPECT_TRUE(allreduce_pair);
  (void)RemoveTree(*dir);
}

TEST(ProbesRunTest, ABinaryWithoutResultSaysWhy) {
  absl::StatusOr<std::string> dir =
      MakeUniqueDirectory(::testing::TempDir(), "probes-");
  ASSERT_TRUE(dir.ok());
  ProbeOptions options;
  options.trial_binary = "/bin/false";
  options.work_dir = *dir;
  absl::StatusOr<std::vector<v1::Probe>> probes = RunProbes(options, nullptr);
  ASSERT_FALSE(probes.ok());
  EXPECT_EQ(probes.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(probes.status().message().find("exit 1 without a result"),
            std::string::npos)
      << probes.status();
  (void)RemoveTree(*dir);
}

}  // namespace
}  // namespace tessera::agents
