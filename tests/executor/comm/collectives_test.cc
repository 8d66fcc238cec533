// Every collective on every Communicator implementation, against
// hand-computed results: group sizes 1..8, empty, odd and multi-block
// counts, f32/bf16/i32, sum and max, in place and not; rank, size and names;
// and messages of tens of MB.
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "core/status_macros.h"
#include "gtest/gtest.h"
#include "tests/executor/comm/comm_test_util.h"
#include "tests/executor/comm/communicators.h"

namespace tessera::executor {
namespace {

using testing::CommKind;
using testing::Describe;
using testing::ForEveryReduction;
using testing::GarbageBuffer;
using testing::HostBuffer;
using testing::Input;
using testing::InputBuffer;
using testing::kAllDTypes;
using testing::kCommKinds;
using testing::kCounts;
using testing::Reduced;
using testing::RunAllOk;

// (implementation, group size).
class CollectivesTest
    : public ::testing::TestWithParam<std::tuple<CommKind, int>> {};

TEST_P(CollectivesTest, AllReduce) {
  const CommKind kind = std::get<0>(GetParam());
  const int n = std::get<1>(GetParam());
  RunAllOk(kind, n, [n](int rank, Communicator& comm) -> absl::Status {
    return ForEveryReduction([&](int64_t count, DType dtype, ReduceOp op,
                                 bool in_place) -> absl::Status {
      const std::string what =
          absl::StrCat("AllReduce ", Describe(n, count, dtype, op, in_place));
      std::vector<double> input(count), want(count);
      for (int64_t i = 0; i < count; ++i) {
        input[i] = Input(rank, i, dtype);
        want[i] = Reduced(n, i, dtype, op);
      }
      HostBuffer send = InputBuffer(rank, dtype, count);
      HostBuffer recv = GarbageBuffer(dtype, count);
      HostBuffer& out = in_place ? send : recv;
      TESSERA_RETURN_IF_ERROR(comm.AllReduce(send.view(), out.view(), op));
      TESSERA_RETURN_IF_ERROR(out.Expect(want, what));
      if (in_place) return absl::OkStatus();
      return send.Expect(input, what + " (send kept)");
    });
  });
}

TEST_P(CollectivesTest, AllGather) {
  const CommKind kind = std::get<0>(GetParam());
  const int n = std::get<1>(GetParam());
  RunAllOk(kind, n, [n](int rank, Communicator& comm) -> absl::Status {
    for (int64_t count : kCounts) {
      for (DType dtype : kAllDTypes) {
        std::vector<double> want(n * count);
        for (int r = 0; r < n; ++r) {
          for (int64_t i = 0; i < count; ++i) {
            want[r * count + i] = Input(r, i, dtype);
          }
        }
        for (bool in_place : {false, true}) {
          const std::string what =
              absl::StrCat("AllGather ",
                           Describe(n, count, dtype, ReduceOp::kSum, in_place));
          HostBuffer recv = GarbageBuffer(dtype, n * count);
          HostBuffer own = InputBuffer(rank, dtype, count);
          Tensor send = own.view();
          if (in_place) {  // NCCL's in-place form: send is this rank's block
            send = recv.view().Slice(rank * count, count);
            for (int64_t i = 0; i < count; ++i) {
              recv.Set(rank * count + i, Input(rank, i, dtype));
            }
          }
          TESSERA_RETURN_IF_ERROR(comm.AllGather(send, recv.view()));
          TESSERA_RETURN_IF_ERROR(recv.Expect(want, what));
        }
      }
    }
    return absl::OkStatus();
  });
}

TEST_P(CollectivesTest, ReduceScatter) {
  const CommKind kind = std::get<0>(GetParam());
  const int n = std::get<1>(GetParam());
  RunAllOk(kind, n, [n](int rank, Communicator& comm) -> absl::Status {
    return ForEveryReduction([&](int64_t count, DType dtype, ReduceOp op,
                                 bool in_place) -> absl::Status {
      const std::string what = absl::StrCat(
          "ReduceScatter ", Describe(n, count, dtype, op, in_place));
      std::vector<double> want(count);
      for (int64_t i = 0; i < count; ++i) {
        want[i] = Reduced(n, rank * count + i, dtype, op);
      }
      HostBuffer send = InputBuffer(rank, dtype, n * count);
      if (!in_place) {
        HostBuffer recv = GarbageBuffer(dtype, count);
        TESSERA_RETURN_IF_ERROR(
            comm.ReduceScatter(send.view(), recv.view(), op));
        return recv.Expect(want, what);
      }
      // In place: recv is this rank's block of send.
      const Tensor block = send.view().Slice(rank * count, count);
      TESSERA_RETURN_IF_ERROR(comm.ReduceScatter(send.view(), block, op));
      HostBuffer copy(dtype, count);
      for (int64_t i = 0; i < count; ++i) {
        copy.Set(i, send.Get(rank * count + i));
      }
      return copy.Expect(want, what);
    });
  });
}

TEST_P(CollectivesTest, BroadcastFromEveryRoot) {
  const CommKind kind = std::get<0>(GetParam());
  const int n = std::get<1>(GetParam());
  RunAllOk(kind, n, [n](int rank, Communicator& comm) -> absl::Status {
    for (int64_t count : kCounts) {
      for (DType dtype : kAllDTypes) {
        for (int root = 0; root < n; ++root) {
          HostBuffer buf = InputBuffer(rank, dtype, count);
          std::vector<double> want(count);
          for (int64_t i = 0; i < count; ++i) want[i] = Input(root, i, dtype);
          TESSERA_RETURN_IF_ERROR(comm.Broadcast(buf.view(), root));
          TESSERA_RETURN_IF_ERROR(buf.Expect(
              want,
              absl::StrCat("Broadcast root ", root, " ",
                           Describe(n, count, dtype, ReduceOp::kSum, false))));
        }
      }
    }
    return absl::OkStatus();
  });
}

TEST_P(CollectivesTest, BarrierOrdersWrites) {
  const CommKind kind = std::get<0>(GetParam());
  const int n = std::get<1>(GetParam());
  std::vector<int> written(n, 0);
  RunAllOk(kind, n, [&](int rank, Communicator& comm) -> absl::Status {
    for (int round = 1; round <= 20; ++round) {
      written[rank] = round;
      TESSERA_RETURN_IF_ERROR(comm.Barrier());
      for (int r = 0; r < n; ++r) {
        if (written[r] != round) {
          return absl::InternalError(absl::StrCat("round ", round, ": rank ", r,
                                                  " wrote ", written[r]));
        }
      }
      TESSERA_RETURN_IF_ERROR(comm.Barrier());
    }
    return absl::OkStatus();
  });
}

INSTANTIATE_TEST_SUITE_P(GroupSizes, CollectivesTest,
                         testing::EveryKindAndGroupSize(),
                         testing::SizeAndKindParamName);

class CommunicatorTest : public ::testing::TestWithParam<CommKind> {};

TEST_P(CommunicatorTest, RankSizeAndNames) {
  RunAllOk(GetParam(), 5, [](int rank, Communicator& comm) -> absl::Status {
    if (comm.rank() != rank || comm.size() != 5 ||
        testing::WorldRank(comm) != rank ||
        testing::GroupName(comm) != "world") {
      return absl::InternalError(
          absl::StrCat("rank ", comm.rank(), " size ", comm.size(),
                       " world rank ", testing::WorldRank(comm), " group ",
                       testing::GroupName(comm), " at ", rank));
    }
    return absl::OkStatus();
  });
}

TEST_P(CommunicatorTest, CollectivesOfTensOfMegabytes) {
  constexpr int kRanks = 4;
  constexpr int64_t kCount = 6'000'001;  // 24 MB of f32, not divisible by 4
  RunAllOk(
      GetParam(), kRanks, [](int rank, Communicator& comm) -> absl::Status {
        // Small integers: the sums are exact, so each element is checkable.
        std::vector<float> buf(kCount);
        for (int64_t i = 0; i < kCount; ++i) buf[i] = (i * 7 + rank) % 13;
        TESSERA_RETURN_IF_ERROR(comm.AllReduce(
            Tensor{buf.data(), DType::kF32, kCount},
            Tensor{buf.data(), DType::kF32, kCount}, ReduceOp::kSum));
        for (int64_t i = 0; i < kCount; ++i) {
          float want = 0;
          for (int r = 0; r < kRanks; ++r) want += (i * 7 + r) % 13;
          if (buf[i] != want) {
            return absl::InternalError(absl::StrCat(
                "AllReduce element ", i, " is ", buf[i], ", want ", want));
          }
        }
        // AllGather of 8 MB per rank into 32 MB.
        constexpr int64_t kPart = 2'000'000;
        std::vector<int32_t> part(kPart), all(kPart * kRanks, -1);
        for (int64_t i = 0; i < kPart; ++i) {
          part[i] = static_cast<int32_t>(i ^ rank);
        }
        TESSERA_RETURN_IF_ERROR(
            comm.AllGather(Tensor{part.data(), DType::kI32, kPart},
                           Tensor{all.data(), DType::kI32, kPart * kRanks}));
        for (int r = 0; r < kRanks; ++r) {
          for (int64_t i = 0; i < kPart; ++i) {
            if (all[r * kPart + i] != static_cast<int32_t>(i ^ r)) {
              return absl::InternalError(
                  absl::StrCat("AllGather block ", r, " element ", i));
            }
          }
        }
        return absl::OkStatus();
      });
}

INSTANTIATE_TEST_SUITE_P(, CommunicatorTest, ::testing::ValuesIn(kCommKinds),
                         testing::CommKindParamName);

}  // namespace
}  // namespace tessera::executor
