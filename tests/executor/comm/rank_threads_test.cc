// What both runners share: every rank on its own thread at once, statuses
// by rank, and which failures abort the world with which cause.
#include "executor/comm/internal/rank_threads.h"

#include <latch>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tessera::executor::comm_internal {
namespace {

TEST(RankThreadsTest, EveryRankRunsOnItsOwnThreadAtOnce) {
  constexpr int kRanks = 5;
  std::latch all_started(kRanks);  // would never open if ranks ran in turn
  std::vector<std::thread::id> ids(kRanks);
  const std::vector<absl::Status> statuses =
      RunOnThreads(kRanks, [&](int rank) -> absl::Status {
        ids[rank] = std::this_thread::get_id();
        all_started.arrive_and_wait();
        if (rank % 2 == 1) return absl::NotFoundError(absl::StrCat(rank));
        return absl::OkStatus();
      });
  ASSERT_EQ(statuses.size(), static_cast<size_t>(kRanks));
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_NE(ids[r], std::this_thread::get_id());
    for (int s = 0; s < r; ++s) EXPECT_NE(ids[r], ids[s]);
    if (r % 2 == 1) {
      EXPECT_EQ(statuses[r], absl::NotFoundError(absl::StrCat(r)));
    } else {
      EXPECT_TRUE(statuses[r].ok()) << statuses[r];
    }
  }
  EXPECT_TRUE(RunOnThreads(0, [](int) { return absl::OkStatus(); }).empty());
}

TEST(RankThreadsTest, AFailureIsANewCauseUnlessTheWorldAbortedAlready) {
  const absl::Status not_aborted = absl::OkStatus();
  const absl::Status aborted = absl::AbortedError("rank 0 failed: ...");
  EXPECT_TRUE(AbortCause(1, absl::OkStatus(), not_aborted).ok());
  EXPECT_TRUE(AbortCause(1, absl::OkStatus(), aborted).ok());
  // An ABORTED rank was aborted by another...
  EXPECT_TRUE(AbortCause(2, absl::AbortedError("x"), aborted).ok());
  // ...unless nothing aborted the world: then it is the cause.
  EXPECT_EQ(AbortCause(2, absl::AbortedError("x"), not_aborted),
            absl::AbortedError("rank 2 failed: ABORTED: x"));
  // Any other failure is a cause, even after an abort.
  EXPECT_EQ(AbortCause(3, absl::DataLossError("bad batch"), not_aborted),
            absl::DataLossError("rank 3 failed: DATA_LOSS: bad batch"));
  EXPECT_EQ(AbortCause(3, absl::DataLossError("bad batch"), aborted),
            absl::DataLossError("rank 3 failed: DATA_LOSS: bad batch"));
}

}  // namespace
}  // namespace tessera::executor::comm_internal
