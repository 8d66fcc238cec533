// TcpCommunicator::Split: 2x4 groups both ways used at the same time (from
// two threads of each rank as well as interleaved on one), splits of
// splits, ordering by key, and messages of different groups that travel the
// same connections without mixing.
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "executor/comm/tcp_communicator.h"
#include "executor/comm/tcp_run_ranks.h"
#include "gtest/gtest.h"

namespace tessera::executor {
namespace {

void RunTcpAllOk(int n, const RankFunction& fn) {
  TcpWorldOptions options;
  options.timeout = absl::Seconds(30);
  const std::vector<absl::Status> statuses = RunTcpRanks(n, fn, options);
  ASSERT_EQ(statuses.size(), static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(statuses[r].ok()) << "rank " << r << ": " << statuses[r];
  }
}

// The world ranks of comm's members, in group rank order (an AllGather).
absl::Status ExpectMembers(Communicator& comm, int world_rank,
                           const std::vector<int32_t>& want,
                           absl::string_view what) {
  std::vector<int32_t> got(comm.size());
  int32_t mine = world_rank;
  TESSERA_RETURN_IF_ERROR(
      comm.AllGather(Tensor{&mine, DType::kI32, 1},
                     Tensor{got.data(), DType::kI32, comm.size()}));
  if (got != want) {
    return absl::InternalError(absl::StrCat(
        what, " at world rank ", world_rank, ": members ",
        absl::StrJoin(got, ","), ", want ", absl::StrJoin(want, ",")));
  }
  return absl::OkStatus();
}

// `steps` AllReduces of the world rank over `comm`; each must give `want`.
absl::Status SumLoop(Communicator& comm, int rank, int32_t want, int steps,
                     absl::string_view what) {
  for (int step = 0; step < steps; ++step) {
    int32_t sum = rank;
    TESSERA_RETURN_IF_ERROR(comm.AllReduce(Tensor{&sum, DType::kI32, 1},
                                           Tensor{&sum, DType::kI32, 1},
                                           ReduceOp::kSum));
    if (sum != want) {
      return absl::InternalError(absl::StrCat(what, " step ", step, " rank ",
                                              rank, ": sum ", sum, ", want ",
                                              want));
    }
  }
  return absl::OkStatus();
}

TEST(TcpSplitTest, EightRanksIntoTwoByFourBothWaysConcurrently) {
  RunTcpAllOk(8, [](int rank, Communicator& world) -> absl::Status {
    // tp: contiguous groups of 4; dp: ranks with the same position in them.
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> tp,
                             world.Split(rank / 4, rank));
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> dp,
                             world.Split(rank % 4, rank));
    if (tp->size() != 4 || tp->rank() != rank % 4 || dp->size() != 2 ||
        dp->rank() != rank / 4) {
      return absl::InternalError(
          absl::StrCat("rank ", rank, ": tp ", tp->rank(), "/", tp->size(),
                       " dp ", dp->rank(), "/", dp->size()));
    }
    const int32_t t0 = rank / 4 * 4;
    TESSERA_RETURN_IF_ERROR(
        ExpectMembers(*tp, rank, {t0, t0 + 1, t0 + 2, t0 + 3}, "tp"));
    TESSERA_RETURN_IF_ERROR(
        ExpectMembers(*dp, rank, {rank % 4, rank % 4 + 4}, "dp"));
    const int32_t tp_want = 4 * t0 + 6, dp_want = 2 * (rank % 4) + 4;
    // Interleaved on this thread...
    for (int step = 0; step < 10; ++step) {
      TESSERA_RETURN_IF_ERROR(SumLoop(*tp, rank, tp_want, 1, "tp"));
      TESSERA_RETURN_IF_ERROR(SumLoop(*dp, rank, dp_want, 1, "dp"));
      TESSERA_RETURN_IF_ERROR(SumLoop(world, rank, 28, 1, "world"));
    }
    // ...and at the same time from two threads of this rank.
    absl::Status dp_status;
    std::thread dp_thread(
        [&] { dp_status = SumLoop(*dp, rank, dp_want, 50, "dp thread"); });
    absl::Status tp_status = SumLoop(*tp, rank, tp_want, 50, "tp thread");
    dp_thread.join();
    TESSERA_RETURN_IF_ERROR(tp_status);
    return dp_status;
  });
}

TEST(TcpSplitTest, SplitOfASplit) {
  RunTcpAllOk(8, [](int rank, Communicator& world) -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> half,
                             world.Split(rank / 4, rank));
    // Within each half: pairs {0,2} and {1,3} of the half's ranks.
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> pair,
                             half->Split(half->rank() % 2, half->rank()));
    const int32_t base = rank / 4 * 4 + rank % 2;
    TESSERA_RETURN_IF_ERROR(
        ExpectMembers(*pair, rank, {base, base + 2}, "pair"));
    // And once more: every pair into singletons.
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> single,
                             pair->Split(pair->rank(), 0));
    TESSERA_RETURN_IF_ERROR(ExpectMembers(*single, rank, {rank}, "single"));
    auto* tcp = dynamic_cast<TcpCommunicator*>(single.get());
    auto* tcp_pair = dynamic_cast<TcpCommunicator*>(pair.get());
    if (tcp == nullptr || tcp->world_rank() != rank || tcp_pair == nullptr ||
        tcp_pair->group_name() != absl::StrCat("world/split#0:color=", rank / 4,
                                               "/split#0:color=", rank % 2)) {
      return absl::InternalError("world_rank or name of a split of a split");
    }
    // The three levels still work, used one after the other.
    TESSERA_RETURN_IF_ERROR(SumLoop(*pair, rank, 2 * base + 2, 3, "pair"));
    TESSERA_RETURN_IF_ERROR(
        SumLoop(*half, rank, 4 * (rank / 4 * 4) + 6, 3, "half"));
    return SumLoop(world, rank, 28, 3, "world");
  });
}

TEST(TcpSplitTest, OrdersByKeyThenParentRank) {
  RunTcpAllOk(6, [](int rank, Communicator& world) -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> reversed,
                             world.Split(0, -rank));
    TESSERA_RETURN_IF_ERROR(
        ExpectMembers(*reversed, rank, {5, 4, 3, 2, 1, 0}, "reversed"));
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> parity,
                             world.Split(rank % 2 == 0 ? 100 : 7, 0));
    TESSERA_RETURN_IF_ERROR(ExpectMembers(*parity, rank,
                                          rank % 2 == 0
                                              ? std::vector<int32_t>{0, 2, 4}
                                              : std::vector<int32_t>{1, 3, 5},
                                          "parity"));
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> mixed,
                             world.Split(0, rank < 2 ? 1 : 0));
    return ExpectMembers(*mixed, rank, {2, 3, 4, 5, 0, 1}, "mixed");
  });
}

TEST(TcpSplitTest, SendsOfDifferentGroupsDoNotMix) {
  // World ranks 0 and 1 are also ranks 0 and 1 of a split: messages between
  // the same two processes on the two groups must each reach their own.
  RunTcpAllOk(2, [](int rank, Communicator& world) -> absl::Status {
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> copy,
                             world.Split(0, rank));
    const int peer = 1 - rank;
    int32_t on_world = 100 + rank, on_copy = 200 + rank;
    TESSERA_RETURN_IF_ERROR(copy->Send(Tensor{&on_copy, DType::kI32, 1}, peer));
    TESSERA_RETURN_IF_ERROR(
        world.Send(Tensor{&on_world, DType::kI32, 1}, peer));
    int32_t got_world = 0, got_copy = 0;
    TESSERA_RETURN_IF_ERROR(
        world.Recv(Tensor{&got_world, DType::kI32, 1}, peer));
    TESSERA_RETURN_IF_ERROR(
        copy->Recv(Tensor{&got_copy, DType::kI32, 1}, peer));
    if (got_world != 100 + peer || got_copy != 200 + peer) {
      return absl::InternalError(
          absl::StrCat("got ", got_world, " on world, ", got_copy, " on copy"));
    }
    return absl::OkStatus();
  });
}

TEST(TcpSplitTest, NegativeColorFailsOnEveryRank) {
  std::vector<absl::Status> split_status(3);
  RunTcpAllOk(3, [&](int rank, Communicator& world) -> absl::Status {
    split_status[rank] = world.Split(rank == 1 ? -1 : 0, rank).status();
    return world.Barrier();  // the world goes on
  });
  for (const absl::Status& s : split_status) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find(
                  "Split #0 on group world: rank 1: color -1 (must be >= 0)"),
              absl::string_view::npos)
        << s;
  }
}

}  // namespace
}  // namespace tessera::executor
