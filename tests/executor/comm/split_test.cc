// Split on every Communicator implementation: 2x4 groups both ways used at
// the same time (interleaved on one thread of each rank and from two threads
// at once), splits of splits and their names, ordering by key, the engine's
// many groups at once, sends of different groups between the same two ranks,
// and a negative color failing on every rank.
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "gtest/gtest.h"
#include "tests/executor/comm/communicators.h"

namespace tessera::executor {
namespace {

using testing::RunAllOk;

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

class SplitTest : public ::testing::TestWithParam<testing::CommKind> {};

TEST_P(SplitTest, EightRanksIntoTwoByFourBothWaysConcurrently) {
  RunAllOk(GetParam(), 8, [](int rank, Communicator& world) -> absl::Status {
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
    for (int step = 0; step < 20; ++step) {
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

TEST_P(SplitTest, SplitOfASplit) {
  RunAllOk(GetParam(), 8, [](int rank, Communicator& world) -> absl::Status {
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
    if (testing::WorldRank(*single) != rank ||
        testing::GroupName(*pair) !=
            absl::StrCat("world/split#0:color=", rank / 4,
                         "/split#0:color=", rank % 2)) {
      return absl::InternalError(absl::StrCat(
          "world rank ", testing::WorldRank(*single),
          " of a split of a split, ", "group ", testing::GroupName(*pair)));
    }
    // The three levels still work, used one after the other.
    TESSERA_RETURN_IF_ERROR(SumLoop(*pair, rank, 2 * base + 2, 3, "pair"));
    TESSERA_RETURN_IF_ERROR(
        SumLoop(*half, rank, 4 * (rank / 4 * 4) + 6, 3, "half"));
    return SumLoop(world, rank, 28, 3, "world");
  });
}

TEST_P(SplitTest, OrdersByKeyThenParentRank) {
  RunAllOk(GetParam(), 6, [](int rank, Communicator& world) -> absl::Status {
    // Reversed keys reverse the order.
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> reversed,
                             world.Split(0, -rank));
    TESSERA_RETURN_IF_ERROR(
        ExpectMembers(*reversed, rank, {5, 4, 3, 2, 1, 0}, "reversed"));
    // Equal keys keep the parent order; arbitrary color values.
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> parity,
                             world.Split(rank % 2 == 0 ? 100 : 7, 0));
    TESSERA_RETURN_IF_ERROR(ExpectMembers(*parity, rank,
                                          rank % 2 == 0
                                              ? std::vector<int32_t>{0, 2, 4}
                                              : std::vector<int32_t>{1, 3, 5},
                                          "parity"));
    // Keys 1,1,0,0,... : the key-0 ranks first, each part in parent order.
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> mixed,
                             world.Split(0, rank < 2 ? 1 : 0));
    return ExpectMembers(*mixed, rank, {2, 3, 4, 5, 0, 1}, "mixed");
  });
}

TEST_P(SplitTest, ManyGroupsAtOnceLikeTheEngine) {
  // 8 ranks as tp=2 x cp=2 x dp=2 (tp fastest): split into tp, cp, dp and
  // a grad group (cp x dp), then run a collective on each, over and over.
  RunAllOk(GetParam(), 8, [](int rank, Communicator& world) -> absl::Status {
    const int tp = rank % 2, cp = rank / 2 % 2, dp = rank / 4;
    std::vector<std::unique_ptr<Communicator>> groups;
    std::vector<int32_t> want_sums;
    auto add = [&](int color, int key, int32_t want) -> absl::Status {
      TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> g,
                               world.Split(color, key));
      groups.push_back(std::move(g));
      want_sums.push_back(want);
      return absl::OkStatus();
    };
    // Sum of world ranks over each group, by hand.
    TESSERA_RETURN_IF_ERROR(add(cp * 2 + dp, tp, 2 * (rank - tp) + 1));
    TESSERA_RETURN_IF_ERROR(add(tp * 2 + dp, cp, 2 * (rank - 2 * cp) + 2));
    TESSERA_RETURN_IF_ERROR(add(tp * 2 + cp, dp, 2 * (rank - 4 * dp) + 4));
    TESSERA_RETURN_IF_ERROR(add(tp, cp + 2 * dp, 4 * tp + 12));
    for (int step = 0; step < 25; ++step) {
      for (size_t g = 0; g < groups.size(); ++g) {
        int32_t sum = rank;
        const Tensor t{&sum, DType::kI32, 1};
        TESSERA_RETURN_IF_ERROR(groups[g]->AllReduce(t, t, ReduceOp::kSum));
        if (sum != want_sums[g]) {
          return absl::InternalError(absl::StrCat(
              "group ", g, " rank ", rank, ": ", sum, " want ", want_sums[g]));
        }
      }
      TESSERA_RETURN_IF_ERROR(world.Barrier());
    }
    return absl::OkStatus();
  });
}

TEST_P(SplitTest, SendsOfDifferentGroupsDoNotMix) {
  // World ranks 0 and 1 are also ranks 0 and 1 of a split: messages between
  // the same two processes on the two groups must each reach their own.
  RunAllOk(GetParam(), 2, [](int rank, Communicator& world) -> absl::Status {
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

TEST_P(SplitTest, NegativeColorFailsOnEveryRank) {
  std::vector<absl::Status> split_status(3);
  RunAllOk(GetParam(), 3, [&](int rank, Communicator& world) -> absl::Status {
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

INSTANTIATE_TEST_SUITE_P(, SplitTest, ::testing::ValuesIn(testing::kCommKinds),
                         testing::CommKindParamName);

}  // namespace
}  // namespace tessera::executor
