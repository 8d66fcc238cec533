// Failures never hang: mismatched arguments fail on every rank, Abort wakes
// blocked ranks, a missing participant times out, RunRanks propagates the
// first failure.
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "core/status_macros.h"
#include "executor/comm/inproc_communicator.h"
#include "executor/comm/run_ranks.h"
#include "gtest/gtest.h"
#include "tests/executor/comm/comm_test_util.h"

namespace tessera::executor {
namespace {

using Clock = std::chrono::steady_clock;

bool Contains(const absl::Status& s, absl::string_view text) {
  return s.message().find(text) != absl::string_view::npos;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Runs fn(rank, comm) on n threads of a world created with `options`; the
// world is not aborted on failure (unlike RunRanks), to test the raw
// behaviour.
std::vector<absl::Status> RunRaw(
    int n, const std::function<absl::Status(int, InProcessWorld&)>& fn,
    absl::Duration timeout = absl::Seconds(30)) {
  InProcessOptions options;
  options.timeout = timeout;
  std::unique_ptr<InProcessWorld> world = *InProcessWorld::Create(n, options);
  std::vector<absl::Status> statuses(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] { statuses[r] = fn(r, *world); });
  }
  for (std::thread& t : threads) t.join();
  return statuses;
}

// Every rank calls `call` once; all must fail with INVALID_ARGUMENT naming
// `field`, and the group must still work afterwards.
void ExpectMismatchOnEveryRank(
    int n, const std::function<absl::Status(int, Communicator&)>& call,
    absl::string_view field) {
  const std::vector<absl::Status> statuses =
      RunRaw(n, [&](int rank, InProcessWorld& world) -> absl::Status {
        Communicator& comm = world.communicator(rank);
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
    EXPECT_TRUE(Contains(statuses[r], field)) << statuses[r];
  }
}

TEST(FailureTest, MismatchedCountFailsOnEveryRank) {
  ExpectMismatchOnEveryRank(
      4,
      [](int rank, Communicator& comm) {
        float buf[5] = {};
        const int64_t count = rank == 3 ? 5 : 4;
        return comm.AllReduce(Tensor{buf, DType::kF32, count},
                              Tensor{buf, DType::kF32, count}, ReduceOp::kSum);
      },
      "rank 3 passed count 5 but rank 0 passed 4");
}

TEST(FailureTest, MismatchedDtypeFailsOnEveryRank) {
  ExpectMismatchOnEveryRank(
      3,
      [](int rank, Communicator& comm) {
        float buf[4] = {};
        const DType dtype = rank == 1 ? DType::kBF16 : DType::kF32;
        return comm.AllGather(Tensor{buf, dtype, 1}, Tensor{buf + 1, dtype, 3});
      },
      "rank 1 passed dtype bf16 but rank 0 passed f32");
}

TEST(FailureTest, MismatchedOpRootOrCollectiveFailsOnEveryRank) {
  ExpectMismatchOnEveryRank(
      2,
      [](int rank, Communicator& comm) {
        float buf[2] = {};
        return comm.ReduceScatter(Tensor{buf, DType::kF32, 2},
                                  Tensor{buf + rank, DType::kF32, 1},
                                  rank == 0 ? ReduceOp::kSum : ReduceOp::kMax);
      },
      "passed op max");
  ExpectMismatchOnEveryRank(
      3,
      [](int rank, Communicator& comm) {
        float buf = 0;
        return comm.Broadcast(Tensor{&buf, DType::kF32, 1}, rank == 2 ? 1 : 0);
      },
      "passed root 1");
  ExpectMismatchOnEveryRank(
      2,
      [](int rank, Communicator& comm) {
        float buf = 0;
        return rank == 0 ? comm.Broadcast(Tensor{&buf, DType::kF32, 1}, 0)
                         : comm.Barrier();
      },
      "rank 1 called Barrier instead");
}

TEST(FailureTest, OneRanksBadArgumentsFailEveryRank) {
  ExpectMismatchOnEveryRank(
      3,
      [](int rank, Communicator& comm) {
        float send[2] = {}, recv[2] = {};
        return comm.AllReduce(Tensor{send, DType::kF32, 2},
                              Tensor{recv, DType::kF32, rank == 1 ? 1 : 2},
                              ReduceOp::kSum);
      },
      "rank 1: recv.numel 1 != send.numel 2");
  ExpectMismatchOnEveryRank(
      2,
      [](int rank, Communicator& comm) {
        float buf[3] = {};
        return comm.AllReduce(Tensor{buf, DType::kF32, 2},
                              Tensor{buf + rank, DType::kF32, 2},
                              ReduceOp::kSum);
      },
      "partly overlaps");
}

TEST(FailureTest, AbortWakesBlockedRanksAndFailsLaterCalls) {
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

TEST(FailureTest, AbortWakesRanksInASplitGroup) {
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

TEST(FailureTest, MissingParticipantTimesOutNamingOpGroupAndRank) {
  const Clock::time_point start = Clock::now();
  const std::vector<absl::Status> statuses = RunRaw(
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

TEST(FailureTest, TimeoutInASplitGroupNamesItAndTheWorldRank) {
  const std::vector<absl::Status> statuses = RunRaw(
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

TEST(FailureTest, RecvWithoutSenderTimesOut) {
  const std::vector<absl::Status> statuses = RunRaw(
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

TEST(FailureTest, LateArrivalAfterTimeoutFailsThenGroupRecovers) {
  // Rank 1 arrives after rank 0 gave up: it must not use rank 0's stale
  // buffers; it fails too, and the next collective works for both.
  const std::vector<absl::Status> statuses = RunRaw(
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

TEST(FailureTest, RunRanksAbortsTheOthersOnTheFirstFailure) {
  InProcessOptions options;
  options.timeout = absl::Seconds(60);
  const Clock::time_point start = Clock::now();
  const std::vector<absl::Status> statuses = RunRanks(
      4,
      [](int rank, Communicator& comm) -> absl::Status {
        if (rank == 2) return absl::ResourceExhaustedError("activation buffer");
        return comm.Barrier();
      },
      options);
  EXPECT_LT(SecondsSince(start), 10);
  EXPECT_EQ(statuses[2].code(), absl::StatusCode::kResourceExhausted);
  for (int r : {0, 1, 3}) {
    EXPECT_EQ(statuses[r].code(), absl::StatusCode::kAborted) << statuses[r];
    EXPECT_TRUE(Contains(statuses[r], "rank 2 failed")) << statuses[r];
    EXPECT_TRUE(Contains(statuses[r], "activation buffer")) << statuses[r];
  }
  EXPECT_EQ(FirstFailure(statuses), statuses[2]);
}

TEST(FailureTest, BadWorldArguments) {
  EXPECT_EQ(InProcessWorld::Create(0).status().code(),
            absl::StatusCode::kInvalidArgument);
  InProcessOptions options;
  options.timeout = absl::ZeroDuration();
  EXPECT_EQ(InProcessWorld::Create(2, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::vector<absl::Status> statuses =
      RunRanks(0, [](int, Communicator&) { return absl::OkStatus(); });
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(statuses[0].code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(FirstFailure({absl::OkStatus(), absl::OkStatus()}).ok());
}

}  // namespace
}  // namespace tessera::executor
