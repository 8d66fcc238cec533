// Split into tp/dp-like groups, both ways, recursively and many times, with
// collectives running on all of them concurrently.
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "executor/comm/inproc_communicator.h"
#include "executor/comm/run_ranks.h"
#include "gtest/gtest.h"
#include "tests/executor/comm/comm_test_util.h"

namespace tessera::executor {
namespace {

using testing::RunAllOk;

// The world ranks of comm's members, in group rank order (an AllGather).
absl::StatusOr<std::vector<int32_t>> Members(Communicator& comm,
                                             int world_rank) {
  std::vector<int32_t> members(comm.size());
  int32_t mine = world_rank;
  TESSERA_RETURN_IF_ERROR(
      comm.AllGather(Tensor{&mine, DType::kI32, 1},
                     Tensor{members.data(), DType::kI32, comm.size()}));
  return members;
}

absl::Status ExpectMembers(Communicator& comm, int world_rank,
                           const std::vector<int32_t>& want,
                           absl::string_view what) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<int32_t> got, Members(comm, world_rank));
  if (got != want) {
    return absl::InternalError(absl::StrCat(
        what, " at world rank ", world_rank, ": members ",
        absl::StrJoin(got, ","), ", want ", absl::StrJoin(want, ",")));
  }
  return absl::OkStatus();
}

TEST(SplitTest, EightRanksIntoTwoByFourBothWays) {
  RunAllOk(8, [](int rank, Communicator& world) -> absl::Status {
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
    // Interleave collectives on world, tp and dp; each group's sum of world
    // ranks is known by hand.
    for (int step = 0; step < 20; ++step) {
      int32_t tp_sum = rank, dp_sum = rank, world_sum = rank;
      TESSERA_RETURN_IF_ERROR(tp->AllReduce(Tensor{&tp_sum, DType::kI32, 1},
                                            Tensor{&tp_sum, DType::kI32, 1},
                                            ReduceOp::kSum));
      TESSERA_RETURN_IF_ERROR(dp->AllReduce(Tensor{&dp_sum, DType::kI32, 1},
                                            Tensor{&dp_sum, DType::kI32, 1},
                                            ReduceOp::kSum));
      TESSERA_RETURN_IF_ERROR(
          world.AllReduce(Tensor{&world_sum, DType::kI32, 1},
                          Tensor{&world_sum, DType::kI32, 1}, ReduceOp::kSum));
      if (tp_sum != 4 * t0 + 6 || dp_sum != 2 * (rank % 4) + 4 ||
          world_sum != 28) {
        return absl::InternalError(absl::StrCat("step ", step, " rank ", rank,
                                                ": sums ", tp_sum, " ", dp_sum,
                                                " ", world_sum));
      }
    }
    return absl::OkStatus();
  });
}

TEST(SplitTest, SplitOfASplit) {
  RunAllOk(8, [](int rank, Communicator& world) -> absl::Status {
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
    auto* inproc = dynamic_cast<InProcessCommunicator*>(single.get());
    if (inproc == nullptr || inproc->world_rank() != rank) {
      return absl::InternalError("world_rank of a split of a split");
    }
    return absl::OkStatus();
  });
}

TEST(SplitTest, OrdersByKeyThenParentRank) {
  RunAllOk(6, [](int rank, Communicator& world) -> absl::Status {
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

TEST(SplitTest, ManyGroupsAtOnceLikeTheEngine) {
  // 8 ranks as tp=2 x cp=2 x dp=2 (tp fastest): split into tp, cp, dp and
  // a grad group (cp x dp), then run a collective on each, over and over.
  RunAllOk(8, [](int rank, Communicator& world) -> absl::Status {
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

TEST(SplitTest, NegativeColorFailsOnEveryRank) {
  InProcessOptions options;
  options.timeout = absl::Seconds(30);
  const std::vector<absl::Status> statuses = RunRanks(
      4,
      [](int rank, Communicator& world) -> absl::Status {
        return world.Split(rank == 2 ? -1 : 0, rank).status();
      },
      options);
  for (const absl::Status& s : statuses) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("color -1"), absl::string_view::npos) << s;
  }
}

}  // namespace
}  // namespace tessera::executor
