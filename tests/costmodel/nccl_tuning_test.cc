// NCCL's algorithms and protocols (costmodel/comm/nccl_tuning.h) by hand.
// H100 nodes of 8 with the presets' hop figures (1 us NVLink, 5 us network),
// at which the hops are NCCL's own: NVLink LL/LL128/Simple 0.6/1.9/3.4 us
// (tree 0.6/1.25/4.0), network 2.7/4.0/14 us (tree 5.0/8.5/14); base
// latencies ring 6.6/14/8.4 us, tree 6.8/14/8.4, PAT 8.
#include "costmodel/comm/nccl_tuning.h"

#include <algorithm>
#include <memory>

#include "gtest/gtest.h"
#include "costmodel/calibration/measured_collectives.h"

namespace tessera::costmodel {
namespace {

ClusterConfig H100Nodes(int64_t nodes) {
  return MakeCluster(*GpuPreset("h100-sxm"), nodes, 8);
}

constexpr double kUs = 1e-6;

TEST(NcclTuningTest, OnlyTheRingsStepsBetweenNodesPayTheNetwork) {
  const Calibration c;
  const ClusterConfig cl = H100Nodes(2);
  const GroupPlacement g = PlaceGroup(16, 1, 8);  // 8 per node, 2 nodes
  // AllGather, Simple: base 8.4 us + 14 NVLink hops of 3.4 us + 1 network
  // hop of 14 us (n - 1 = 15 steps, nodes - 1 = 1 between nodes) = 70 us;
  // every hop at the network's 14 us would be 218.4 us.
  EXPECT_NEAR(NcclLatencyS(Collective::kAllGather, NcclAlgorithm::kRing,
                           NcclProtocol::kSimple, g, cl, c),
              70.0 * kUs, 1e-12);
  // AllReduce: 2 * 15 steps, 2 * 1 between nodes: 8.4 + 28 * 3.4 + 2 * 14
  // = 131.6 us.
  EXPECT_NEAR(NcclLatencyS(Collective::kAllReduce, NcclAlgorithm::kRing,
                           NcclProtocol::kSimple, g, cl, c),
              131.6 * kUs, 1e-12);
  // LL: base 6.6 + 14 * 0.6 + 1 * 2.7 = 17.7 us.
  EXPECT_NEAR(NcclLatencyS(Collective::kAllGather, NcclAlgorithm::kRing,
                           NcclProtocol::kLl, g, cl, c),
              17.7 * kUs, 1e-12);
  // A cluster whose network hop is twice the preset's doubles NCCL's.
  ClusterConfig slow_net = cl;
  slow_net.inter_node_latency_us = 10;
  EXPECT_NEAR(NcclLatencyS(Collective::kAllGather, NcclAlgorithm::kRing,
                           NcclProtocol::kSimple, g, slow_net, c),
              84.0 * kUs, 1e-12);
  // ring_latency_factor scales all of it.
  Calibration slow;
  slow.ring_latency_factor = 3;
  EXPECT_NEAR(NcclLatencyS(Collective::kAllGather, NcclAlgorithm::kRing,
                           NcclProtocol::kSimple, g, cl, slow),
              3 * 70.0 * kUs, 1e-12);
}

TEST(NcclTuningTest, TheTreeCrossesLog2NodesAndChainsInsideThem) {
  const Calibration c;
  const ClusterConfig cl = H100Nodes(128);
  const GroupPlacement g = PlaceGroup(1024, 1, 8);  // 128 nodes of 8
  // Tree, Simple: 8.4 + 2 * (7 NVLink hops * 4.0 us + 7 network hops * 14
  // us) = 260.4 us.
  EXPECT_NEAR(NcclLatencyS(Collective::kAllReduce, NcclAlgorithm::kTree,
                           NcclProtocol::kSimple, g, cl, c),
              260.4 * kUs, 1e-12);
  // A small AllReduce takes the tree with LL: 6.8 + 2 * (7 * 0.6 + 7 * 5.0)
  // = 85.2 us, far below the ring's 2046 steps.
  const NcclChoice small =
      FastestNcclAlgorithm(Collective::kAllReduce, 1024, g, 320e9, cl, c);
  EXPECT_EQ(small.algorithm, NcclAlgorithm::kTree);
  EXPECT_EQ(small.protocol, NcclProtocol::kLl);
  EXPECT_NEAR(small.latency_s,
              85.2 * kUs, 1e-12);
  // The tree runs only AllReduce.
  EXPECT_FALSE(NcclRuns(Collective::kAllGather, NcclAlgorithm::kTree,
                        NcclProtocol::kSimple, g));
}

TEST(NcclTuningTest, ProtocolsBySize) {
  const Calibration c;
  const ClusterConfig cl = H100Nodes(1);
  const GroupPlacement g = PlaceGroup(8, 1, 8);
  const double busbw = 360e9;
  // 64 KiB: LL, latency-bound: 6.6 + 7 * 0.6 us + 7/8 * 65536 /
  // min(0.5 * 360, 141) GB/s.
  const NcclChoice tiny =
      FastestNcclAlgorithm(Collective::kAllGather, 65536, g, busbw, cl, c);
  EXPECT_EQ(tiny.protocol, NcclProtocol::kLl);
  EXPECT_NEAR(tiny.time_s,
              10.8 * kUs + 7.0 / 8 * 65536 / 141e9, 1e-12);
  // 1 GB: Simple, bandwidth-bound: 8.4 + 7 * 3.4 us + 7/8 * 1e9 / 360e9.
  const NcclChoice large =
      FastestNcclAlgorithm(Collective::kAllGather, 1e9, g, busbw, cl, c);
  EXPECT_EQ(large.protocol, NcclProtocol::kSimple);
  EXPECT_NEAR(large.time_s, 32.2 * kUs + 7.0 / 8 * 1e9 / 360e9, 1e-12);
  // 128 KiB: the fastest of LL (11.6 us), LL128 (14 + 7 * 1.9 us, 0.9375 of
  // the bandwidth: 27.6 us) and Simple (32.5 us).
  const double s = 131072;
  const double ll128 = 27.3 * kUs + 7.0 / 8 * s / (0.9375 * 360e9);
  const double simple = 32.2 * kUs + 7.0 / 8 * s / 360e9;
  const double ll = 10.8 * kUs + 7.0 / 8 * s / 141e9;
  const NcclChoice mid =
      FastestNcclAlgorithm(Collective::kAllGather, s, g, busbw, cl, c);
  EXPECT_NEAR(mid.time_s, std::min({ll128, simple, ll}), 1e-12);
  EXPECT_EQ(mid.protocol, NcclProtocol::kLl);
}

TEST(NcclTuningTest, PatForOneRankPerNode) {
  const Calibration c;
  const ClusterConfig cl = H100Nodes(64);
  const GroupPlacement g = PlaceGroup(64, 8, 8);  // one rank per node
  ASSERT_EQ(g.ranks_per_node, 1);
  // PAT: 8 + log2(64) * 14 / 3.5 + 64 * 2.8 = 211.2 us.
  EXPECT_NEAR(NcclLatencyS(Collective::kAllGather, NcclAlgorithm::kPat,
                           NcclProtocol::kSimple, g, cl, c),
              211.2 * kUs, 1e-12);
  // The ring's network hops take the tree's latency with one rank per node
  // (LL 5.0 us instead of 2.7): 6.6 + 63 * 5.0 us.
  EXPECT_NEAR(NcclLatencyS(Collective::kAllGather, NcclAlgorithm::kRing,
                           NcclProtocol::kLl, g, cl, c),
              321.6 * kUs, 1e-12);
  EXPECT_FALSE(NcclRuns(Collective::kAllGather, NcclAlgorithm::kPat,
                        NcclProtocol::kSimple, PlaceGroup(64, 1, 8)));
  EXPECT_FALSE(NcclRuns(Collective::kAllReduce, NcclAlgorithm::kPat,
                        NcclProtocol::kSimple, g));
}

TEST(NcclTuningTest, TheFastestIsTheMinimumOfWhatNcclRuns) {
  // FastestNcclAlgorithm takes its terms once for speed; it must agree with
  // NcclTimeS over every (algorithm, protocol) NCCL runs.
  const Calibration c;
  ClusterConfig cl = H100Nodes(256);
  cl.inter_node_latency_us = 7;
  for (const GroupPlacement& g :
       {PlaceGroup(8, 1, 8), PlaceGroup(16, 1, 8), PlaceGroup(64, 8, 8),
        PlaceGroup(2048, 1, 8), PlaceGroup(32, 2, 8), PlaceGroup(2, 8, 8)}) {
    for (Collective k : {Collective::kAllReduce, Collective::kAllGather,
                         Collective::kReduceScatter}) {
      for (double bytes : {8.0, 65536.0, 4e6, 1e9}) {
        double least = 1e300;
        for (NcclAlgorithm a :
             {NcclAlgorithm::kRing, NcclAlgorithm::kTree, NcclAlgorithm::kPat}) {
          for (NcclProtocol p : {NcclProtocol::kLl, NcclProtocol::kLl128,
                                 NcclProtocol::kSimple}) {
            if (!NcclRuns(k, a, p, g)) continue;
            least = std::min(least, NcclTimeS(k, a, p, bytes, g, 300e9, cl, c));
          }
        }
        const NcclChoice best = FastestNcclAlgorithm(k, bytes, g, 300e9, cl, c);
        EXPECT_NEAR(best.time_s, least, least * 1e-12);
        EXPECT_NEAR(best.latency_s,
                    NcclLatencyS(k, best.algorithm, best.protocol, g, cl, c),
                    1e-15);
      }
    }
  }
}

TEST(NcclTuningTest, BandwidthBehindAMeasuredTimeGivesItBack) {
  const Calibration c;
  const ClusterConfig cl = H100Nodes(2);
  const GroupPlacement g = PlaceGroup(16, 1, 8);
  // 256 MiB measured at 184.6 GB/s of bus bandwidth (the Ultra-Scale
  // Playbook's cluster on 2 nodes): t = 15/16 * S / 184.6e9. Taking out the
  // ring's 70 us, B = 15/16 * S / (t - 70 us).
  const double s = 256.0 * 1024 * 1024;
  const double t = 15.0 / 16 * s / 184.6e9;
  const double b =
      BandwidthBehindMeasuredTime(Collective::kAllGather, s, t, g, cl, c);
  EXPECT_NEAR(b, 15.0 / 16 * s / (t - 70.0 * kUs), 1);
  EXPECT_NEAR(FastestNcclAlgorithm(Collective::kAllGather, s, g, b, cl, c)
                  .time_s,
              t, 1e-12);
  // A measurement below the model's latency is all latency.
  EXPECT_GE(BandwidthBehindMeasuredTime(Collective::kAllGather, 1, 1e-6, g,
                                        cl, c),
            1e14);
}

}  // namespace
}  // namespace tessera::costmodel
