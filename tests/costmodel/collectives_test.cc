#include "costmodel/comm/collectives.h"

#include "gtest/gtest.h"
#include "costmodel/comm/rank_placement.h"

namespace tessera::costmodel {
namespace {

// H100 nodes of 8: NVLink 450 GB/s per GPU, 400 GB/s of NICs per node,
// 1 us / 5 us per step; at 80% efficiency: 360 GB/s inside a node, 40 GB/s
// per GPU's NIC share.
ClusterConfig H100Nodes(int64_t nodes) {
  return MakeCluster(*GpuPreset("h100-sxm"), nodes, 8);
}

TEST(PlaceGroupTest, Placements) {
  auto expect = [](GroupPlacement g, int64_t per_node, int64_t nodes) {
    EXPECT_EQ(g.ranks_per_node, per_node);
    EXPECT_EQ(g.nodes, nodes);
  };
  expect(PlaceGroup(8, 1, 8), 8, 1);   // tp 8 in a node
  expect(PlaceGroup(16, 1, 8), 8, 2);  // tp 16 spans two nodes
  expect(PlaceGroup(4, 2, 8), 4, 1);   // cp 4 after tp 2
  expect(PlaceGroup(8, 2, 8), 4, 2);
  expect(PlaceGroup(64, 8, 8), 1, 64);  // dp after tp 8: one GPU per node
  expect(PlaceGroup(1, 64, 8), 1, 1);
}

TEST(PlaceLayoutTest, RankOrderTpCpDpPp) {
  // tp 8, cp 2, dp 4 (zero 3, shard groups of 2), pp 2 on 8-GPU nodes.
  const LayoutPlacement p = PlaceLayout(
      Layout{.tp = 8, .pp = 2, .cp = 2, .dp = 4, .zero = 3, .shard_group = 2},
      8);
  EXPECT_EQ(p.tp.nodes, 1);
  EXPECT_EQ(p.tp.ranks_per_node, 8);
  EXPECT_EQ(p.cp.nodes, 2);
  EXPECT_EQ(p.data.ranks, 8);  // dp * cp
  EXPECT_EQ(p.data.nodes, 8);
  EXPECT_EQ(p.shard.ranks, 4);  // shard_group * cp
  EXPECT_EQ(p.replica.ranks, 2);
  EXPECT_TRUE(p.pp_crosses_nodes);
  // tp 2, cp 2, dp 2: the cp and data groups stay inside the node.
  const LayoutPlacement small =
      PlaceLayout(Layout{.tp = 2, .pp = 2, .cp = 2, .dp = 2}, 8);
  EXPECT_EQ(small.cp.nodes, 1);
  EXPECT_EQ(small.data.nodes, 1);
  EXPECT_EQ(small.data.ranks_per_node, 4);
  EXPECT_TRUE(small.pp_crosses_nodes);
}

TEST(CollectivesTest, BusBandwidthIsHierarchical) {
  const Calibration c;
  const ClusterConfig cl = H100Nodes(8);
  EXPECT_DOUBLE_EQ(BusBandwidthBytesPerS(PlaceGroup(8, 1, 8), cl, c), 360e9);
  // 8 GPUs per node across nodes: 8 NICs, 8 * 400/8 * 0.8 = 320 GB/s.
  EXPECT_DOUBLE_EQ(BusBandwidthBytesPerS(PlaceGroup(16, 1, 8), cl, c), 320e9);
  // One GPU per node: one NIC, 40 GB/s.
  EXPECT_DOUBLE_EQ(BusBandwidthBytesPerS(PlaceGroup(8, 8, 8), cl, c), 40e9);
  EXPECT_DOUBLE_EQ(BusBandwidthBytesPerS(PlaceGroup(8, 2, 8), cl, c), 160e9);
}

TEST(CollectivesTest, TimesByHand) {
  // NCCL's fastest algorithm and protocol (nccl_tuning.h): at 1 GB the
  // ring with Simple, whose latency is base 8.4 us + NVLink hops of 3.4 us +
  // network hops (only between nodes) of 14 us.
  const Calibration c;
  const ClusterConfig cl = H100Nodes(8);
  const double gb = 1e9;
  // AllReduce, 8 GPUs of a node: 8.4 + 2*7 * 3.4 us + 2*7/8 * 1e9 /
  // 360e9.
  EXPECT_NEAR(
      CollectiveTimeS(Collective::kAllReduce, gb, PlaceGroup(8, 1, 8), cl, c),
      56e-6 + 1.75e9 / 360e9, 1e-12);
  // AllReduce, 64 GPUs on 8 nodes: the ring's 8.4 + (126 - 14) * 3.4 + 14 *
  // 14 us = 585.2 us beats the tree's 0.92 bandwidth on 2 S at this size:
  // bandwidth 2*63/64 * 1e9 / 320e9.
  EXPECT_NEAR(
      CollectiveTimeS(Collective::kAllReduce, gb, PlaceGroup(64, 1, 8), cl, c),
      585.2e-6 + 2 * 63.0 / 64 * 1e9 / 320e9, 1e-12);
  // AllGather and ReduceScatter, 16 GPUs on 2 nodes: 8.4 + 14 * 3.4 + 1 *
  // 14 us + 15/16 * 1e9 / 320e9.
  for (Collective k : {Collective::kAllGather, Collective::kReduceScatter}) {
    EXPECT_NEAR(CollectiveTimeS(k, gb, PlaceGroup(16, 1, 8), cl, c),
                70e-6 + 15.0 / 16 * 1e9 / 320e9, 1e-12);
  }
  EXPECT_EQ(
      CollectiveTimeS(Collective::kAllReduce, gb, PlaceGroup(1, 1, 8), cl, c),
      0);
  // Half the bandwidth (FSDP's efficiency) doubles the transfer.
  EXPECT_NEAR(CollectiveTimeS(Collective::kAllGather, gb, PlaceGroup(16, 1, 8),
                              cl, c, 0.5),
              70e-6 + 2 * 15.0 / 16 * 1e9 / 320e9, 1e-12);
  // Point to point: 1e8 bytes over a NIC share, or over NVLink.
  EXPECT_NEAR(PointToPointTimeS(1e8, true, cl, c), 5e-6 + 1e8 / 40e9, 1e-12);
  EXPECT_NEAR(PointToPointTimeS(1e8, false, cl, c), 1e-6 + 1e8 / 360e9, 1e-12);
}

TEST(CollectivesTest, NcclTestsBusBandwidthRelation) {
  // Without latency, S/t * (n-1)/n (AllGather) and S/t * 2(n-1)/n
  // (AllReduce) give back the bus bandwidth (nccl-tests PERFORMANCE.md).
  const ClusterConfig cl = H100Nodes(4);
  Calibration c;
  c.ring_latency_factor = 0;
  for (const GroupPlacement& g :
       {PlaceGroup(8, 1, 8), PlaceGroup(32, 1, 8), PlaceGroup(4, 8, 8)}) {
    const double n = static_cast<double>(g.ranks);
    const double busbw = BusBandwidthBytesPerS(g, cl, c);
    const double s = 3e8;
    EXPECT_NEAR(
        s / CollectiveTimeS(Collective::kAllGather, s, g, cl, c) * (n - 1) / n,
        busbw, busbw * 1e-12);
    EXPECT_NEAR(s / CollectiveTimeS(Collective::kAllReduce, s, g, cl, c) * 2 *
                    (n - 1) / n,
                busbw, busbw * 1e-12);
  }
}

TEST(CollectivesTest, LatencyOfOneRankPerNodeGroups) {
  // Latency-bound collectives (8 bytes) of groups one rank per node: PAT's
  // 8 + log2(nodes) * 14/3.5 + 2.8 us per rank beats the ring's LL, which
  // pays a network hop per node (5.0 us, the tree's figure with one rank
  // per node); the AllReduce tree with LL 6.8 + 2 * log2(nodes) * 5.0 us.
  const Calibration c;
  const ClusterConfig cl = H100Nodes(1024);
  const double tiny = 8;
  const double ag128 = CollectiveTimeS(Collective::kAllGather, tiny,
                                       PlaceGroup(128, 8, 8), cl, c);
  // PAT moves S at 0.75 of the 40 GB/s NIC share.
  EXPECT_NEAR(ag128, (8 + 7 * 4.0 + 128 * 2.8) * 1e-6 + 8 / 30e9, 1e-12);
  const double ag1024 = CollectiveTimeS(Collective::kAllGather, tiny,
                                        PlaceGroup(1024, 8, 8), cl, c);
  EXPECT_NEAR(ag1024, (8 + 10 * 4.0 + 1024 * 2.8) * 1e-6 + 8 / 30e9, 1e-12);
  const double ar128 = CollectiveTimeS(Collective::kAllReduce, tiny,
                                       PlaceGroup(128, 8, 8), cl, c);
  const double ar1024 = CollectiveTimeS(Collective::kAllReduce, tiny,
                                        PlaceGroup(1024, 8, 8), cl, c);
  // Tree LL: 2 S at 0.92/3.8 of the 40 GB/s NIC share (under LL's 20.4
  // GB/s ceiling).
  const double tree_bw = 40e9 * 0.92 / 3.8;
  EXPECT_NEAR(ar128, (6.8 + 2 * 7 * 5.0) * 1e-6 + 2 * 8 / tree_bw, 1e-12);
  EXPECT_NEAR(ar1024, (6.8 + 2 * 10 * 5.0) * 1e-6 + 2 * 8 / tree_bw, 1e-12);
}

}  // namespace
}  // namespace tessera::costmodel
