// Every collective against hand-computed results: group sizes 1..8, empty,
// odd and multi-block counts, f32/bf16/i32, sum and max, in place and not.
#include <cstdint>
#include <vector>

#include "core/status_macros.h"
#include "executor/comm/inproc_communicator.h"
#include "executor/comm/run_ranks.h"
#include "gtest/gtest.h"
#include "tests/executor/comm/comm_test_util.h"

namespace tessera::executor {
namespace {

using testing::Describe;
using testing::HostBuffer;
using testing::Input;
using testing::kAllDTypes;
using testing::kAllOps;
using testing::kCounts;
using testing::Reduced;
using testing::RunAllOk;

constexpr double kGarbage = 99;

class CollectivesTest : public ::testing::TestWithParam<int> {};

TEST_P(CollectivesTest, AllReduce) {
  const int n = GetParam();
  RunAllOk(n, [n](int rank, Communicator& comm) -> absl::Status {
    for (int64_t count : kCounts) {
      for (DType dtype : kAllDTypes) {
        for (ReduceOp op : kAllOps) {
          std::vector<double> want(count);
          for (int64_t i = 0; i < count; ++i) {
            want[i] = Reduced(n, i, dtype, op);
          }
          for (bool in_place : {false, true}) {
            const std::string what = absl::StrCat(
                "AllReduce ", Describe(n, count, dtype, op, in_place));
            HostBuffer send(dtype, count);
            send.Fill([&](int64_t i) { return Input(rank, i, dtype); });
            HostBuffer recv(dtype, count);
            recv.Fill([](int64_t) { return kGarbage; });
            HostBuffer& out = in_place ? send : recv;
            TESSERA_RETURN_IF_ERROR(
                comm.AllReduce(send.view(), out.view(), op));
            TESSERA_RETURN_IF_ERROR(out.Expect(want, what));
            if (!in_place) {
              std::vector<double> input(count);
              for (int64_t i = 0; i < count; ++i)
                input[i] = Input(rank, i, dtype);
              TESSERA_RETURN_IF_ERROR(
                  send.Expect(input, what + " (send kept)"));
            }
          }
        }
      }
    }
    return absl::OkStatus();
  });
}

TEST_P(CollectivesTest, AllGather) {
  const int n = GetParam();
  RunAllOk(n, [n](int rank, Communicator& comm) -> absl::Status {
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
          HostBuffer recv(dtype, n * count);
          recv.Fill([](int64_t) { return kGarbage; });
          HostBuffer own(dtype, count);
          own.Fill([&](int64_t i) { return Input(rank, i, dtype); });
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
  const int n = GetParam();
  RunAllOk(n, [n](int rank, Communicator& comm) -> absl::Status {
    for (int64_t count : kCounts) {
      for (DType dtype : kAllDTypes) {
        for (ReduceOp op : kAllOps) {
          std::vector<double> want(count);
          for (int64_t i = 0; i < count; ++i) {
            want[i] = Reduced(n, rank * count + i, dtype, op);
          }
          for (bool in_place : {false, true}) {
            const std::string what = absl::StrCat(
                "ReduceScatter ", Describe(n, count, dtype, op, in_place));
            HostBuffer send(dtype, n * count);
            send.Fill([&](int64_t i) { return Input(rank, i, dtype); });
            HostBuffer recv(dtype, count);
            recv.Fill([](int64_t) { return kGarbage; });
            if (in_place) {  // recv is this rank's block of send
              const Tensor block = send.view().Slice(rank * count, count);
              TESSERA_RETURN_IF_ERROR(
                  comm.ReduceScatter(send.view(), block, op));
              HostBuffer copy(dtype, count);
              for (int64_t i = 0; i < count; ++i) {
                copy.Set(i, send.Get(rank * count + i));
              }
              TESSERA_RETURN_IF_ERROR(copy.Expect(want, what));
            } else {
              TESSERA_RETURN_IF_ERROR(
                  comm.ReduceScatter(send.view(), recv.view(), op));
              TESSERA_RETURN_IF_ERROR(recv.Expect(want, what));
            }
          }
        }
      }
    }
    return absl::OkStatus();
  });
}

TEST_P(CollectivesTest, BroadcastFromEveryRoot) {
  const int n = GetParam();
  RunAllOk(n, [n](int rank, Communicator& comm) -> absl::Status {
    for (int64_t count : kCounts) {
      for (DType dtype : kAllDTypes) {
        for (int root = 0; root < n; ++root) {
          HostBuffer buf(dtype, count);
          buf.Fill([&](int64_t i) { return Input(rank, i, dtype); });
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
  const int n = GetParam();
  std::vector<int> written(n, 0);
  RunAllOk(n, [&](int rank, Communicator& comm) -> absl::Status {
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

INSTANTIATE_TEST_SUITE_P(GroupSizes, CollectivesTest, ::testing::Range(1, 9),
                         [](const ::testing::TestParamInfo<int>& param) {
                           return absl::StrCat("n", param.param);
                         });

TEST(CollectivesTest, RankAndSize) {
  RunAllOk(5, [](int rank, Communicator& comm) -> absl::Status {
    if (comm.rank() != rank || comm.size() != 5) {
      return absl::InternalError(absl::StrCat("rank ", comm.rank(), " size ",
                                              comm.size(), " at ", rank));
    }
    return absl::OkStatus();
  });
}

TEST(CollectivesTest, StatsCountPayloadBytes) {
  std::vector<CommStats> stats(4);
  RunAllOk(4, [&](int rank, Communicator& comm) -> absl::Status {
    auto& inproc = dynamic_cast<InProcessCommunicator&>(comm);
    HostBuffer a(DType::kF32, 100), gathered(DType::kF32, 400);
    HostBuffer b(DType::kBF16, 10);
    TESSERA_RETURN_IF_ERROR(comm.AllReduce(a.view(), a.view(), ReduceOp::kSum));
    TESSERA_RETURN_IF_ERROR(comm.AllGather(a.view(), gathered.view()));
    TESSERA_RETURN_IF_ERROR(comm.Broadcast(b.view(), 0));
    TESSERA_RETURN_IF_ERROR(comm.Barrier());
    TESSERA_RETURN_IF_ERROR(comm.Send(b.view(), (rank + 1) % 4));
    TESSERA_RETURN_IF_ERROR(comm.Recv(b.view(), (rank + 3) % 4));
    stats[rank] = inproc.stats();
    return absl::OkStatus();
  });
  for (const CommStats& s : stats) {
    EXPECT_EQ(s.collectives, 4);
    EXPECT_EQ(s.sends, 1);
    EXPECT_EQ(s.recvs, 1);
    // 400 (AllReduce) + 1600 (AllGather recv) + 20 (Broadcast) + 20 + 20.
    EXPECT_EQ(s.bytes, 400 + 1600 + 20 + 20 + 20);
    EXPECT_GE(s.wait_s, 0);
    EXPECT_GE(s.copy_s, 0);
    EXPECT_LT(s.wait_s + s.copy_s, 30);
  }
}

}  // namespace
}  // namespace tessera::executor
