// What an agent's probes can be and how far they are trusted
// (service/probe_check.h), against hand-made probes.
#include "service/probe_check.h"

#include "gtest/gtest.h"

namespace tessera::service {
namespace {

db::Agent AgentOf(const std::string& id, const std::string& gpu_name,
                  int64_t ranks) {
  db::Agent a;
  a.info.id = id;
  a.info.backend = gpu_name.empty() ? "cpu" : "cuda";
  a.info.gpu_name = gpu_name;
  a.info.gpu_count = ranks;
  return a;
}

db::Probe Gemm(const std::string& agent, const std::string& kind,
               double tflops) {
  db::Probe p;
  p.agent_id = agent;
  p.kind = kind;
  p.value = tflops;
  p.unit = "TFLOP/s";
  return p;
}

TEST(ProbeCheckTest, ImpossibleProbesAreRefusedNamingThem) {
  const db::Agent h100 = AgentOf("g", "NVIDIA H100 80GB HBM3", 8);
  EXPECT_TRUE(CheckProbes(h100, {Gemm("g", "gemm_bf16", 800)}).ok());
  // Above 1.1 x the fastest H100 datasheet rate (fp8).
  const absl::Status fast = CheckProbes(h100, {Gemm("g", "gemm_bf16", 45000)});
  EXPECT_EQ(fast.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(fast.message().find("probes[0] gemm_bf16: 45000 TFLOP/s is above "
                                "what a NVIDIA H100 80GB HBM3 can do"),
            std::string::npos)
      << fast.message();
  const db::Agent cpu = AgentOf("c", "", 2);
  EXPECT_TRUE(CheckProbes(cpu, {Gemm("c", "gemm_f32", 0.2)}).ok());
  for (double bad : {45000.0, 1e300, -0.2, 0.0}) {
    EXPECT_FALSE(CheckProbes(cpu, {Gemm("c", "gemm_f32", bad)}).ok()) << bad;
  }
  db::Probe copy = Gemm("c", "memcpy", 1e6);
  copy.unit = "GB/s";
  EXPECT_FALSE(CheckProbes(cpu, {copy}).ok());
}

TEST(ProbeCheckTest, AProbeCountsForAtMostFourTimesItsReferences) {
  const db::Agent a = AgentOf("a", "", 2);
  // Alone, the first probe is what it says (0.2 per host: 0.1 per rank).
  EXPECT_DOUBLE_EQ(*TrustedPeakTflopsPerRank(a, {a}, {Gemm("a", "gemm_f32", 0.2)}),
                   0.1);
  // A poisoned later probe counts for 4 x the earlier one.
  EXPECT_DOUBLE_EQ(*TrustedPeakTflopsPerRank(
                       a, {a},
                       {Gemm("a", "gemm_f32", 0.2), Gemm("a", "gemm_f32", 50)}),
                   0.4);
  // A probe taken while the host was loaded does not lower it.
  EXPECT_DOUBLE_EQ(*TrustedPeakTflopsPerRank(
                       a, {a},
                       {Gemm("a", "gemm_f32", 0.2), Gemm("a", "gemm_f32", 0.05)}),
                   0.1);
  // A newcomer is held to 4 x its peers on the same device.
  const db::Agent b = AgentOf("b", "", 2);
  EXPECT_DOUBLE_EQ(*TrustedPeakTflopsPerRank(
                       b, {a, b},
                       {Gemm("a", "gemm_f32", 0.2), Gemm("b", "gemm_f32", 60)}),
                   0.4);
  // The gang's ceiling is its fastest trusted member.
  EXPECT_DOUBLE_EQ(*GangPeakTflopsPerRank(
                       {a, b}, {a, b},
                       {Gemm("a", "gemm_f32", 0.04), Gemm("b", "gemm_f32", 0.2)}),
                   0.08);
  EXPECT_FALSE(TrustedPeakTflopsPerRank(b, {a, b}, {Gemm("a", "gemm_f32", 0.2)})
                   .has_value());
}

}  // namespace
}  // namespace tessera::service
