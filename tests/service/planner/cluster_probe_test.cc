#include "service/cluster_probe.h"

#include "gtest/gtest.h"

namespace tessera::service {
namespace {

using Counts = std::vector<int64_t>;

db::CollectiveSample Sample(const char* collective, int64_t nodes, double busbw,
                            absl::Time at, int64_t gpus_per_node = 2,
                            int64_t bytes = 1 << 20) {
  db::CollectiveSample s;
  s.cluster = "c";
  s.collective = collective;
  s.nodes = nodes;
  s.gpus_per_node = gpus_per_node;
  s.bytes = bytes;
  s.busbw_gbs = busbw;
  s.measured_at = at;
  return s;
}

TEST(ClusterProbeTest, NodeCountsDoubleUpToTheAgentsAndIncludeThem) {
  EXPECT_TRUE(ClusterProbeNodeCounts(1, 2, "cpu").empty());
  EXPECT_EQ(ClusterProbeNodeCounts(2, 2, "cpu"), Counts({2}));
  EXPECT_EQ(ClusterProbeNodeCounts(6, 2, "cpu"), Counts({2, 4, 6}));
  EXPECT_EQ(ClusterProbeNodeCounts(8, 1, "cpu"), Counts({2, 4, 8}));
  // CUDA trials on one agent run NCCL between processes: swept too.
  EXPECT_EQ(ClusterProbeNodeCounts(1, 8, "cuda"), Counts({1}));
  EXPECT_EQ(ClusterProbeNodeCounts(3, 8, "cuda"), Counts({1, 2, 3}));
  EXPECT_EQ(ClusterProbeNodeCounts(3, 1, "cuda"), Counts({2, 3}));
  EXPECT_TRUE(ClusterProbeNodeCounts(0, 8, "cuda").empty());
}

TEST(ClusterProbeTest, OnlyNodeCountsWithoutASweepAtThatPlacementAreLeft) {
  const absl::Time t = absl::FromUnixSeconds(1000);
  const std::vector<db::CollectiveSample> stored = {
      Sample("all_gather", 2, 1, t), Sample("all_gather", 4, 1, t, 8)};
  EXPECT_EQ(UnprobedNodeCounts({2, 4, 8}, stored, 2), Counts({4, 8}));
  EXPECT_EQ(UnprobedNodeCounts({2, 4, 8}, stored, 8), Counts({2, 8}));
}

TEST(ClusterProbeTest, SweepJsonBecomesSamplesOrNamesWhatIsWrong) {
  const std::string ok = R"({"collectives": [
      {"collective": "all_gather", "nodes": 2, "gpus_per_node": 2,
       "bytes": 65536, "seconds": 0.01, "busbw_gbs": 1.5},
      {"collective": "sendrecv", "nodes": 2, "gpus_per_node": 2,
       "bytes": 65536, "seconds": 0.01, "busbw_gbs": 2.5}]})";
  absl::StatusOr<std::vector<db::CollectiveSample>> s =
      SamplesOfSweep(ok, "agents/cpu/x", 2, 2, "a,b");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[1].collective, "sendrecv");
  EXPECT_EQ((*s)[1].cluster, "agents/cpu/x");
  EXPECT_EQ((*s)[1].agent_ids, "a,b");
  EXPECT_EQ((*s)[1].bytes, 65536);
  EXPECT_EQ((*s)[1].busbw_gbs, 2.5);

  const std::pair<std::string, const char*> bad[] = {
      {"[]", "result_json"},
      {R"({"collectives": []})", "result_json.collectives"},
      {R"({"collectives": [{"collective": "all_gather"}]})",
       "collectives[0].nodes"},
      {R"({"collectives": [{"collective": "broadcast", "nodes": 2,
          "gpus_per_node": 2, "bytes": 1, "busbw_gbs": 1}]})",
       "collectives[0].collective"},
      {R"({"collectives": [{"collective": "all_gather", "nodes": 2,
          "gpus_per_node": 2, "bytes": 1, "busbw_gbs": 0}]})",
       "collectives[0].busbw_gbs"},
      {R"({"collectives": [{"collective": "all_gather", "nodes": 4,
          "gpus_per_node": 2, "bytes": 1, "busbw_gbs": 1}]})",
       "collectives[0]: measured on 4 nodes"},
  };
  for (const auto& [json, field] : bad) {
    absl::StatusOr<std::vector<db::CollectiveSample>> r =
        SamplesOfSweep(json, "c", 2, 2, "a,b");
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << json;
    EXPECT_NE(r.status().message().find(field), std::string::npos)
        << r.status();
  }
  absl::StatusOr<std::vector<db::CollectiveSample>> failed = SamplesOfSweep(
      R"({"collectives": [], "error": "no peer"})", "c", 2, 2, "a,b");
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(failed.status().message().find("no peer"), std::string::npos);
}

TEST(ClusterProbeTest, OneNodeSamplesComeFromTheAgentsOwnProbes) {
  auto probe = [](const char* kind, int64_t group, int64_t bytes,
                  double value) {
    db::Probe p;
    p.kind = kind;
    p.group_size = group;
    p.bytes = bytes;
    p.value = value;
    return p;
  };
  const std::vector<db::Probe> probes = {
      probe("gemm_f32", 1, 0, 0.2),        probe("memcpy", 1, 64 << 20, 12),
      probe("allreduce", 2, 1 << 20, 3),   probe("allreduce", 4, 1 << 20, 9),
      probe("allreduce", 2, 1 << 20, 3.5),  // newer: wins
      probe("allgather", 2, 16 << 20, 5)};
  const std::vector<db::CollectiveSample> s =
      OneNodeSamplesOfProbes(probes, "c", 2, "a");
  ASSERT_EQ(s.size(), 3u);  // all_gather, all_reduce, sendrecv (sorted)
  EXPECT_EQ(s[0].collective, "all_gather");
  EXPECT_EQ(s[1].collective, "all_reduce");
  EXPECT_EQ(s[1].busbw_gbs, 3.5);
  EXPECT_EQ(s[2].collective, "sendrecv");
  EXPECT_EQ(s[2].busbw_gbs, 12);
  for (const db::CollectiveSample& x : s) {
    EXPECT_EQ(x.nodes, 1);
    EXPECT_EQ(x.gpus_per_node, 2);
  }
  EXPECT_TRUE(OneNodeSamplesOfProbes(probes, "c", 8, "a").empty());
}

TEST(ClusterProbeTest, NewerSweepsReplaceOlderOnesAndTheImportsPoints) {
  const absl::Time imported_at = absl::FromUnixSeconds(2000);
  costmodel::MeasuredCollectives imported({
      {costmodel::CollectiveOp::kAllGather, 2, 2, 1 << 20, 100},
      {costmodel::CollectiveOp::kAllGather, 4, 2, 1 << 20, 50},
  });
  const std::vector<db::CollectiveSample> probed = {
      Sample("all_gather", 2, 7, absl::FromUnixSeconds(1000)),  // pre-import
      Sample("all_gather", 4, 3, absl::FromUnixSeconds(3000)),
      Sample("all_gather", 4, 5, absl::FromUnixSeconds(4000)),  // newest
      Sample("sendrecv", 2, 9, absl::FromUnixSeconds(3000)),
  };
  std::shared_ptr<const costmodel::MeasuredCollectives> m =
      MergeProbedCollectives(&imported, imported_at, probed);
  ASSERT_NE(m, nullptr);
  EXPECT_DOUBLE_EQ(
      *m->BusBandwidthGbs(costmodel::CollectiveOp::kAllGather, 1 << 20, 2), 100);
  EXPECT_DOUBLE_EQ(
      *m->BusBandwidthGbs(costmodel::CollectiveOp::kAllGather, 1 << 20, 4), 5);
  EXPECT_DOUBLE_EQ(
      *m->BusBandwidthGbs(costmodel::CollectiveOp::kSendRecv, 1 << 20, 2), 9);
  // Without an import every sweep counts, the newest per pair.
  m = MergeProbedCollectives(nullptr, std::nullopt, probed);
  EXPECT_DOUBLE_EQ(
      *m->BusBandwidthGbs(costmodel::CollectiveOp::kAllGather, 1 << 20, 2), 7);
  EXPECT_EQ(MergeProbedCollectives(nullptr, std::nullopt, {}), nullptr);
}

}  // namespace
}  // namespace tessera::service
