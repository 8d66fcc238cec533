// Failures on every Communicator implementation: mismatched collectives
// fail on every rank naming both sides (and the group goes on), one rank's
// bad arguments fail every rank naming it, and the runners abort the others
// on the first failure and reject an empty world.
#include <chrono>
#include <functional>
#include <vector>

#include "core/status_macros.h"
#include "gtest/gtest.h"
#include "tests/executor/comm/comm_test_util.h"
#include "tests/executor/comm/communicators.h"

namespace tessera::executor {
namespace {

using testing::Clock;
using testing::CommKind;
using testing::Contains;
using testing::SecondsSince;

// Every rank calls `call` once; all must fail with INVALID_ARGUMENT
// containing `text`, and the group must still work afterwards.
void ExpectMismatchOnEveryRank(
    CommKind kind, int n,
    const std::function<absl::Status(int, Communicator&)>& call,
    absl::string_view text) {
  const std::vector<absl::Status> statuses = testing::RunRaw(
      kind, n, [&](int rank, Communicator& comm) -> absl::Status {
        absl::Status status = call(rank, comm);
        float x = 1;
        TESSERA_RETURN_IF_ERROR(comm.AllReduce(Tensor{&x, DType::kF32, 1},
                                               Tensor{&x, DType::kF32, 1},
                                               ReduceOp::kSum));
        if (x != n) return absl::InternalError("group broken after mismatch");
        return status;
      });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(statuses[r].code(), absl::StatusCode::kInvalidArgument)
        << "rank " << r << ": " << statuses[r];
    EXPECT_TRUE(Contains(statuses[r], text)) << statuses[r];
  }
}

class FailureTest : public ::testing::TestWithParam<CommKind> {};

TEST_P(FailureTest, MismatchedCountFailsOnEveryRankNamingBothSides) {
  ExpectMismatchOnEveryRank(
      GetParam(), 4,
      [](int rank, Communicator& comm) {
        float buf[5] = {};
        const int64_t count = rank == 3 ? 5 : 4;
        return comm.AllReduce(Tensor{buf, DType::kF32, count},
                              Tensor{buf, DType::kF32, count}, ReduceOp::kSum);
      },
      "AllReduce #0 (f32 x 4, sum) on group world: rank 3 passed count 5 but "
      "rank 0 passed 4");
}

TEST_P(FailureTest, MismatchedDtypeFailsOnEveryRank) {
  ExpectMismatchOnEveryRank(
      GetParam(), 3,
      [](int rank, Communicator& comm) {
        float buf[4] = {};
        const DType dtype = rank == 1 ? DType::kBF16 : DType::kF32;
        return comm.AllGather(Tensor{buf, dtype, 1}, Tensor{buf + 1, dtype, 3});
      },
      "rank 1 passed dtype bf16 but rank 0 passed f32");
}

TEST_P(FailureTest, MismatchedOpRootOrCollectiveFailsOnEveryRank) {
  ExpectMismatchOnEveryRank(
      GetParam(), 2,
      [](int rank, Communicator& comm) {
        float buf[2] = {};
        return comm.ReduceScatter(Tensor{buf, DType::kF32, 2},
                                  Tensor{buf + rank, DType::kF32, 1},
                                  rank == 0 ? ReduceOp::kSum : ReduceOp::kMax);
      },
      "rank 1 passed op max but rank 0 passed sum");
  ExpectMismatchOnEveryRank(
      GetParam(), 3,
      [](int rank, Communicator& comm) {
        float buf = 0;
        return comm.Broadcast(Tensor{&buf, DType::kF32, 1}, rank == 2 ? 1 : 0);
      },
      "rank 2 passed root 1 but rank 0 passed 0");
  ExpectMismatchOnEveryRank(
      GetParam(), 2,
      [](int rank, Communicator& comm) {
        float buf = 0;
        return rank == 0 ? comm.Broadcast(Tensor{&buf, DType::kF32, 1}, 0)
                         : comm.Barrier();
      },
      "rank 1 called Barrier instead");
}

TEST_P(FailureTest, OneRanksBadArgumentsFailEveryRank) {
  ExpectMismatchOnEveryRank(
      GetParam(), 3,
      [](int rank, Communicator& comm) {
        float send[2] = {}, recv[2] = {};
        return comm.AllReduce(Tensor{send, DType::kF32, 2},
                              Tensor{recv, DType::kF32, rank == 1 ? 1 : 2},
                              ReduceOp::kSum);
      },
      "rank 1: recv.numel 1 != send.numel 2");
  ExpectMismatchOnEveryRank(
      GetParam(), 2,
      [](int rank, Communicator& comm) {
        float buf[3] = {};
        return comm.AllReduce(Tensor{buf, DType::kF32, 2},
                              Tensor{buf + rank, DType::kF32, 2},
                              ReduceOp::kSum);
      },
      "partly overlaps");
}

TEST_P(FailureTest, RunnerAbortsTheOthersOnTheFirstFailure) {
  const Clock::time_point start = Clock::now();
  const std::vector<absl::Status> statuses = testing::RunRanksOf(
      GetParam(), 4,
      [](int rank, Communicator& comm) -> absl::Status {
        if (rank == 2) return absl::ResourceExhaustedError("activation buffer");
        return comm.Barrier();
      },
      absl::Seconds(60));
  EXPECT_LT(SecondsSince(start), 10);
  EXPECT_EQ(statuses[2].code(), absl::StatusCode::kResourceExhausted);
  for (int r : {0, 1, 3}) {
    EXPECT_EQ(statuses[r].code(), absl::StatusCode::kAborted) << statuses[r];
    EXPECT_EQ(statuses[r].message(),
              testing::PeerAbortMessage(
                  GetParam(), 2,
                  "rank 2 failed: RESOURCE_EXHAUSTED: activation buffer"));
  }
  EXPECT_EQ(FirstFailure(statuses), statuses[2]);
}

TEST_P(FailureTest, RunnerRejectsAnEmptyWorld) {
  const std::vector<absl::Status> statuses = testing::RunRanksOf(
      GetParam(), 0, [](int, Communicator&) { return absl::OkStatus(); });
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(statuses[0].code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(statuses[0], "world size 0")) << statuses[0];
}

INSTANTIATE_TEST_SUITE_P(, FailureTest,
                         ::testing::ValuesIn(testing::kCommKinds),
                         testing::CommKindParamName);

}  // namespace
}  // namespace tessera::executor
