#include "core/workload.h"

#include <limits>

#include "gtest/gtest.h"

namespace tessera {
namespace {

Workload Example() {
  return Workload{*ModelPreset("llama2-7b"),
                  MakeCluster(*GpuPreset("h100-sxm"), 32, 8),
                  TrainingConfig{512, 4096, 1e12}};
}

TEST(WorkloadTest, PresetsValidate) {
  for (const std::string& name : GpuPresetNames()) {
    absl::StatusOr<GpuSpec> g = GpuPreset(name);
    ASSERT_TRUE(g.ok());
    EXPECT_TRUE(ValidateGpu(*g).ok()) << name;
    EXPECT_LT(g->idle_w, g->tdp_w);
  }
  EXPECT_TRUE(ValidateWorkload(Example()).ok());
  EXPECT_EQ(Example().cluster.world_size(), 256);
  EXPECT_EQ(Example().training.tokens_per_step(), 512 * 4096);
}

TEST(WorkloadTest, ClusterTakesGpuLinkDefaults) {
  ClusterConfig c = MakeCluster(*GpuPreset("a100-sxm-80g"), 4, 8);
  EXPECT_DOUBLE_EQ(c.intra_node_gbs, 300);
  EXPECT_DOUBLE_EQ(c.inter_node_gbs, 200);
  EXPECT_GT(c.inter_node_latency_us, c.intra_node_latency_us);
}

TEST(WorkloadTest, ErrorsNameTheField) {
  Workload w = Example();
  w.cluster.nodes = 0;
  EXPECT_NE(ValidateWorkload(w).message().find("cluster.nodes"),
            std::string::npos);
  w = Example();
  w.cluster.inter_node_gbs = -1;
  EXPECT_NE(ValidateWorkload(w).message().find("cluster.inter_node_gbs"),
            std::string::npos);
  w = Example();
  w.training.global_batch = 0;
  EXPECT_NE(ValidateWorkload(w).message().find("training.global_batch"),
            std::string::npos);
  w = Example();
  w.training.seq_len = -4;
  EXPECT_NE(ValidateWorkload(w).message().find("training.seq_len"),
            std::string::npos);
  w = Example();
  w.cluster.gpu.tdp_w = 0;
  EXPECT_NE(ValidateWorkload(w).message().find("gpu.tdp_w"), std::string::npos);
  EXPECT_EQ(GpuPreset("b200").status().code(), absl::StatusCode::kNotFound);
  w = Example();
  w.cluster.gpu.peak_dense_tflops = std::numeric_limits<double>::infinity();
  EXPECT_NE(ValidateWorkload(w).message().find("gpu.peak_dense_tflops"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera
