// The in-process communicator's own failure behaviour: InProcessWorld::Abort
// wakes blocked ranks (also in split groups) and fails later calls, with the
// cause word for word; a missing participant or sender times out naming op,
// group and rank in the in-process wording; a late arrival fails and the
// group recovers; the world rejects bad arguments.
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "core/status_macros.h"
#include "executor/comm/inproc_communicator.h"
#include "executor/comm/run_ranks.h"
#include "gtest/gtest.h"
#include "tests/executor/comm/comm_test_util.h"
#include "tests/executor/comm/communicators.h"

namespace tessera::executor {
namespace {

using testing::Clock;
using testing::Contains;
using testing::SecondsSince;

TEST(InProcessFailureTest, AbortWakesBlockedRanksAndFailsLaterCalls) {
  InProcessOptions options;
  options.timeout = absl::Seconds(60);
  std::unique_ptr<InProcessWorld> world = *InProcessWorld::Create(4, options);
  std::vector<absl::Status> statuses(4);
  std::vector<double> waited_s(4);
  std::vector<std::thread> threads;
  for (int r = 1; r < 4; ++r) {
    threads.emplace_back([&, r] {
      const Clock::time_point start = Clock::now();
      Communicator& comm = world->communicator(r);
      float x = 0;
      // Rank 1 waits in a Recv from rank 0; ranks 2 and 3 in a collective.
      statuses[r] =
          r == 1 ? comm.Recv(Tensor{&x, DType::kF32, 1}, 0)
                 : comm.AllReduce(Tensor{&x, DType::kF32, 1},
                                  Tensor{&x, DType::kF32, 1}, ReduceOp::kSum);
      waited_s[r] = SecondsSince(start);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  world->Abort(absl::ResourceExhaustedError("rank 0 ran out of memory"));
  for (std::thread& t : threads) t.join();
  for (int r = 1; r < 4; ++r) {
    EXPECT_EQ(statuses[r].code(), absl::StatusCode::kAborted) << statuses[r];
    EXPECT_EQ(statuses[r].message(), "rank 0 ran out of memory");
    EXPECT_LT(waited_s[r], 10) << "rank " << r;
  }
  // Every later call on any rank, and on groups split before, fails too.
  Communicator& comm = world->communicator(0);
  float x = 0;
  const Tensor t{&x, DType::kF32, 1};
  EXPECT_EQ(comm.Send(t, 1).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(comm.Recv(t, 1).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(comm.Barrier().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(comm.Split(0, 0).status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(comm.Broadcast(t, 0).code(), absl::StatusCode::kAborted);
  // A second cause does not replace the first.
  world->Abort(absl::InternalError("later"));
  EXPECT_EQ(world->abort_status().message(), "rank 0 ran out of memory");
}

TEST(InProcessFailureTest, AbortWakesRanksInASplitGroup) {
  InProcessOptions options;
  options.timeout = absl::Seconds(60);
  std::unique_ptr<InProcessWorld> world = *InProcessWorld::Create(4, options);
  std::vector<absl::Status> statuses(4);
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r) {
    threads.emplace_back([&, r] {
      absl::StatusOr<std::unique_ptr<Communicator>> pair =
          world->communicator(r).Split(r / 2, r);
      if (!pair.ok()) {
        statuses[r] = pair.status();
        return;
      }
      if (r == 3) {  // never joins its pair's barrier: aborts instead
        world->Abort(absl::InternalError("rank 3 gave up"));
        return;
      }
      // Pair {2, 3} waits for rank 3 forever; pair {0, 1} keeps going until
      // the abort reaches it.
      do {
        statuses[r] = (*pair)->Barrier();
      } while (r < 2 && statuses[r].ok());
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r : {0, 1, 2}) {
    EXPECT_EQ(statuses[r].code(), absl::StatusCode::kAborted) << statuses[r];
    EXPECT_EQ(statuses[r].message(), "rank 3 gave up");
  }
}

TEST(InProcessFailureTest, MissingParticipantTimesOutNamingOpGroupAndRank) {
  const Clock::time_point start = Clock::now();
  const std::vector<absl::Status> statuses = testing::RunInProcessRaw(
      3,
      [](int rank, InProcessWorld& world) -> absl::Status {
        if (rank == 2) return absl::OkStatus();  // skips the collective
        float x[5] = {};
        return world.communicator(rank).AllReduce(Tensor{x, DType::kF32, 5},
                                                  Tensor{x, DType::kF32, 5},
                                                  ReduceOp::kSum);
      },
      absl::Milliseconds(300));
  const double elapsed_s = SecondsSince(start);
  for (int r : {0, 1}) {
    const absl::Status& s = statuses[r];
    EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
    EXPECT_TRUE(Contains(s, "AllReduce #0 (f32 x 5, sum) on group world")) << s;
    EXPECT_TRUE(Contains(s, "rank 2 did not arrive")) << s;
  }
  EXPECT_GE(elapsed_s, 0.3);
  EXPECT_LT(elapsed_s, 5);
}

TEST(InProcessFailureTest, TimeoutInASplitGroupNamesItAndTheWorldRank) {
  const std::vector<absl::Status> statuses = testing::RunInProcessRaw(
      4,
      [](int rank, InProcessWorld& world) -> absl::Status {
        TESSERA_ASSIGN_OR_RETURN(
            std::unique_ptr<Communicator> pair,
            world.communicator(rank).Split(rank % 2, rank));
        if (rank == 3) return absl::OkStatus();
        return pair->Barrier();
      },
      absl::Milliseconds(200));
  EXPECT_TRUE(statuses[0].ok()) << statuses[0];
  EXPECT_TRUE(statuses[2].ok()) << statuses[2];
  EXPECT_EQ(statuses[1].code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(
      Contains(statuses[1], "Barrier #0 on group world/split#0:color=1"))
      << statuses[1];
  EXPECT_TRUE(Contains(statuses[1], "rank 1 (world rank 3) did not arrive"))
      << statuses[1];
}

TEST(InProcessFailureTest, RecvWithoutSenderTimesOut) {
  const std::vector<absl::Status> statuses = testing::RunInProcessRaw(
      2,
      [](int rank, InProcessWorld& world) -> absl::Status {
        if (rank == 1) return absl::OkStatus();
        float x = 0;
        return world.communicator(0).Recv(Tensor{&x, DType::kF32, 1}, 1);
      },
      absl::Milliseconds(200));
  EXPECT_EQ(statuses[0].code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(Contains(statuses[0], "Recv of f32 x 1 from rank 1"))
      << statuses[0];
  EXPECT_TRUE(Contains(statuses[0], "on group world")) << statuses[0];
}

TEST(InProcessFailureTest, LateArrivalAfterTimeoutFailsThenGroupRecovers) {
  // Rank 1 arrives after rank 0 gave up: it must not use rank 0's stale
  // buffers; it fails too, and the next collective works for both.
  const std::vector<absl::Status> statuses = testing::RunInProcessRaw(
      2,
      [](int rank, InProcessWorld& world) -> absl::Status {
        Communicator& comm = world.communicator(rank);
        float x = 1;
        const Tensor t{&x, DType::kF32, 1};
        // Rank 0 gives up at 1 s and waits at the next collective until 2 s;
        // rank 1 arrives at 1.5 s.
        if (rank == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        }
        const absl::Status first = comm.AllReduce(t, t, ReduceOp::kSum);
        if (first.code() != absl::StatusCode::kDeadlineExceeded) {
          return absl::InternalError(absl::StrCat("first: ", first.ToString()));
        }
        x = 1;
        TESSERA_RETURN_IF_ERROR(comm.AllReduce(t, t, ReduceOp::kSum));
        return x == 2 ? absl::OkStatus() : absl::InternalError("bad sum");
      },
      absl::Seconds(1));
  EXPECT_TRUE(statuses[0].ok()) << statuses[0];
  EXPECT_TRUE(statuses[1].ok()) << statuses[1];
}

TEST(InProcessFailureTest, BadWorldArguments) {
  EXPECT_EQ(InProcessWorld::Create(0).status().code(),
            absl::StatusCode::kInvalidArgument);
  InProcessOptions options;
  options.timeout = absl::ZeroDuration();
  EXPECT_EQ(InProcessWorld::Create(2, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(FirstFailure({absl::OkStatus(), absl::OkStatus()}).ok());
}

}  // namespace
}  // namespace tessera::executor
