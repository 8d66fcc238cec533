#include "service/agents_gpu.h"

#include "gtest/gtest.h"

namespace tessera::service {
namespace {

db::Agent CpuAgent(int64_t ranks) {
  db::Agent a;
  a.info.id = "cpu-a";
  a.info.hostname = "box";
  a.info.backend = "cpu";
  a.info.gpu_name = "AMD EPYC";
  a.info.gpu_count = ranks;
  a.info.memory_bytes = int64_t{4} << 30;
  return a;
}

db::Probe P(const std::string& kind, int64_t group, int64_t bytes,
            double value) {
  db::Probe p;
  p.kind = kind;
  p.group_size = group;
  p.bytes = bytes;
  p.value = value;
  p.unit = kind.rfind("gemm", 0) == 0 ? "TFLOP/s" : "GB/s";
  return p;
}

TEST(AgentsGpuTest, OneRankOfTheAgentFromItsProbes) {
  const std::vector<db::Probe> probes = {
      P("gemm_f32", 1, 0, 0.5),        // older
      P("memcpy", 1, 64 << 20, 8),     // older
      P("allreduce", 2, 16 << 20, 6),  // a smaller group
      P("allreduce", 4, 1 << 20, 2),   // the largest group, small message
      P("allreduce", 4, 16 << 20, 3),  // the largest group and message
      P("reducescatter", 4, 16 << 20, 9),
      P("gemm_f32", 1, 0, 0.8),  // newest wins
      P("memcpy", 1, 64 << 20, 10),
  };
  absl::StatusOr<v1::GpuSpec> g = GpuSpecFromAgent(CpuAgent(4), probes, {});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->preset(), "");
  EXPECT_DOUBLE_EQ(g->peak_dense_tflops(), 0.8 / 4);  // the host's, per rank
  EXPECT_EQ(g->memory_bytes(), int64_t{4} << 30);
  EXPECT_DOUBLE_EQ(g->hbm_gbs(), 10);
  EXPECT_DOUBLE_EQ(g->nvlink_gbs(), 10);
  EXPECT_DOUBLE_EQ(g->inter_node_gbs(), 3);
  EXPECT_DOUBLE_EQ(g->tdp_w(), kNominalCpuRankTdpW);
  EXPECT_DOUBLE_EQ(g->idle_w(), 0);
  EXPECT_EQ(AgentsGpuName(CpuAgent(4)), "agents/cpu/AMD EPYC");
}

TEST(AgentsGpuTest, TheSpecsFiguresWinAndASingleRankUsesTheCopyRate) {
  v1::GpuSpec overrides;
  overrides.set_preset("agents");
  overrides.set_tdp_w(120);
  overrides.set_memory_bytes(int64_t{2} << 30);
  absl::StatusOr<v1::GpuSpec> g = GpuSpecFromAgent(
      CpuAgent(1), {P("gemm_f32", 1, 0, 0.3), P("memcpy", 1, 1 << 20, 7)},
      overrides);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_DOUBLE_EQ(g->peak_dense_tflops(), 0.3);
  EXPECT_DOUBLE_EQ(g->tdp_w(), 120);
  EXPECT_EQ(g->memory_bytes(), int64_t{2} << 30);
  EXPECT_DOUBLE_EQ(g->inter_node_gbs(), 7);  // no collective probe
}

TEST(AgentsGpuTest, WithoutProbesThereIsNoGpuYet) {
  absl::StatusOr<v1::GpuSpec> g =
      GpuSpecFromAgent(CpuAgent(2), {P("allreduce", 2, 1 << 20, 3)}, {});
  EXPECT_EQ(g.status().code(), absl::StatusCode::kFailedPrecondition);
  db::Agent no_memory = CpuAgent(2);
  no_memory.info.memory_bytes = 0;
  g = GpuSpecFromAgent(
      no_memory, {P("gemm_f32", 1, 0, 0.3), P("memcpy", 1, 1 << 20, 7)}, {});
  EXPECT_EQ(g.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tessera::service
