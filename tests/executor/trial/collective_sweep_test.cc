#include "executor/trial/collective_sweep.h"

#include <set>

#include "executor/comm/tcp_run_ranks.h"
#include "executor/cpu/cpu_backend.h"
#include "gtest/gtest.h"

namespace tessera::executor {
namespace {

// nccl-tests' conventions, computed by hand: 1e9 bytes in 1 s on 4 ranks
// is algbw 1 GB/s.
TEST(BusBandwidthTest, NcclTestsConventions) {
  EXPECT_DOUBLE_EQ(*BusBandwidthGbs("all_reduce", 1'000'000'000, 1.0, 4), 1.5);
  EXPECT_DOUBLE_EQ(*BusBandwidthGbs("all_gather", 1'000'000'000, 1.0, 4), 0.75);
  EXPECT_DOUBLE_EQ(*BusBandwidthGbs("reduce_scatter", 2'000'000'000, 1.0, 4),
                   1.5);
  EXPECT_DOUBLE_EQ(*BusBandwidthGbs("sendrecv", 1'000'000'000, 0.5, 8), 2.0);
}

TEST(BusBandwidthTest, RejectsWhatIsNotAMeasurement) {
  EXPECT_EQ(BusBandwidthGbs("all_reduce", 1, 1.0, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BusBandwidthGbs("all_reduce", 1, 0.0, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BusBandwidthGbs("broadcast", 1, 1.0, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Four TCP ranks as two nodes of two: every collective at every size, the
// figures agreed by every rank and consistent with their own times.
TEST(CollectiveSweepTest, SweepsEveryCollectiveAndSizeOverTcp) {
  CollectiveSweepOptions options;
  options.min_bytes = 4096;
  options.max_bytes = 65536;
  std::vector<std::vector<SweptCollective>> by_rank(4);
  const std::vector<absl::Status> statuses =
      RunTcpRanks(4, [&](int rank, Communicator& world) -> absl::Status {
        CpuBackend host;
        absl::StatusOr<std::vector<SweptCollective>> s =
            SweepCollectives(world, host, 2, options);
        if (!s.ok()) return s.status();
        by_rank[rank] = *std::move(s);
        return absl::OkStatus();
      });
  for (const absl::Status& s : statuses) ASSERT_TRUE(s.ok()) << s;
  const std::vector<SweptCollective>& swept = by_rank[0];
  ASSERT_EQ(swept.size(), 3u * 4u);  // 4 KiB, 16 KiB, 64 KiB x 4 collectives
  std::set<int64_t> sizes;
  std::set<std::string> collectives;
  for (const SweptCollective& s : swept) {
    sizes.insert(s.bytes);
    collectives.insert(s.collective);
    EXPECT_EQ(s.nodes, 2);
    EXPECT_EQ(s.gpus_per_node, 2);
    EXPECT_GT(s.seconds, 0);
    EXPECT_NEAR(s.busbw_gbs,
                *BusBandwidthGbs(s.collective, s.bytes, s.seconds, 4),
                1e-9 * s.busbw_gbs);
  }
  EXPECT_EQ(sizes, (std::set<int64_t>{4096, 16384, 65536}));
  EXPECT_EQ(collectives.size(), 4u);
  for (int r = 1; r < 4; ++r) {
    ASSERT_EQ(by_rank[r].size(), swept.size());
    for (size_t i = 0; i < swept.size(); ++i) {
      EXPECT_EQ(by_rank[r][i].seconds, swept[i].seconds) << "rank " << r;
    }
  }
}

TEST(CollectiveSweepTest, RejectsAPlacementThatDoesNotDivideTheWorld) {
  const std::vector<absl::Status> statuses =
      RunTcpRanks(2, [&](int, Communicator& world) -> absl::Status {
        CpuBackend host;
        return SweepCollectives(world, host, 3, {}).status();
      });
  for (const absl::Status& s : statuses) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("ranks_per_node"), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace tessera::executor
