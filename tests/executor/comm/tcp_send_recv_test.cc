// TcpCommunicator's point-to-point messages: rings and pipeline schedules
// where every rank sends before it receives, large messages sent both ways
// at once (eager: neither Send waits for a Recv), FIFO per pair, sends to
// oneself, NCCL group semantics and size checks.
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "core/status_macros.h"
#include "executor/comm/tcp_communicator.h"
#include "executor/comm/tcp_run_ranks.h"
#include "gtest/gtest.h"
#include "tests/executor/comm/comm_test_util.h"

namespace tessera::executor {
namespace {

using testing::HostBuffer;
using testing::Input;

void RunTcpAllOk(int n, const RankFunction& fn) {
  TcpWorldOptions options;
  options.timeout = absl::Seconds(30);
  const std::vector<absl::Status> statuses = RunTcpRanks(n, fn, options);
  ASSERT_EQ(statuses.size(), static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(statuses[r].ok()) << "rank " << r << ": " << statuses[r];
  }
}

class TcpRingTest : public ::testing::TestWithParam<int> {};

TEST_P(TcpRingTest, EveryRankSendsBeforeReceiving) {
  const int n = GetParam();
  RunTcpAllOk(n, [n](int rank, Communicator& comm) -> absl::Status {
    for (DType dtype : testing::kAllDTypes) {
      for (int64_t count : testing::kCounts) {
        HostBuffer out(dtype, count), in(dtype, count);
        out.Fill([&](int64_t i) { return Input(rank, i, dtype); });
        const int prev = (rank + n - 1) % n;
        TESSERA_RETURN_IF_ERROR(comm.Send(out.view(), (rank + 1) % n));
        TESSERA_RETURN_IF_ERROR(comm.Recv(in.view(), prev));
        std::vector<double> want(count);
        for (int64_t i = 0; i < count; ++i) want[i] = Input(prev, i, dtype);
        TESSERA_RETURN_IF_ERROR(in.Expect(
            want,
            absl::StrCat("ring n=", n, " ", DTypeName(dtype), " x ", count)));
      }
    }
    return absl::OkStatus();
  });
}

INSTANTIATE_TEST_SUITE_P(GroupSizes, TcpRingTest, ::testing::Range(1, 9),
                         [](const ::testing::TestParamInfo<int>& param) {
                           return absl::StrCat("n", param.param);
                         });

TEST(TcpSendRecvTest, RingInAGroupBothDirections) {
  // Ring attention's exchange: post the receive from the left and the
  // right and the sends to both, in one group.
  constexpr int kRanks = 5;
  RunTcpAllOk(kRanks, [](int rank, Communicator& comm) -> absl::Status {
    const int left = (rank + kRanks - 1) % kRanks, right = (rank + 1) % kRanks;
    for (int step = 0; step < 10; ++step) {
      int32_t from_left = -1, from_right = -1, mine = rank * 100 + step;
      TESSERA_RETURN_IF_ERROR(comm.GroupStart());
      TESSERA_RETURN_IF_ERROR(
          comm.Recv(Tensor{&from_left, DType::kI32, 1}, left));
      TESSERA_RETURN_IF_ERROR(
          comm.Recv(Tensor{&from_right, DType::kI32, 1}, right));
      TESSERA_RETURN_IF_ERROR(comm.Send(Tensor{&mine, DType::kI32, 1}, right));
      TESSERA_RETURN_IF_ERROR(comm.Send(Tensor{&mine, DType::kI32, 1}, left));
      TESSERA_RETURN_IF_ERROR(comm.GroupEnd());
      if (from_left != left * 100 + step || from_right != right * 100 + step) {
        return absl::InternalError(absl::StrCat(
            "rank ", rank, " step ", step, ": ", from_left, " ", from_right));
      }
    }
    return absl::OkStatus();
  });
}

TEST(TcpSendRecvTest, PipelineAllForwardThenAllBackward) {
  // GPipe-like: stage s receives micro-batch m from s-1, adds 1, sends it
  // on; then the gradients flow back the same way. Stages send all their
  // micro-batches before the next stage has received any.
  constexpr int kStages = 4, kMicroBatches = 6, kElems = 33;
  RunTcpAllOk(kStages, [](int stage, Communicator& pp) -> absl::Status {
    std::vector<std::vector<float>> acts(kMicroBatches,
                                         std::vector<float>(kElems));
    for (int m = 0; m < kMicroBatches; ++m) {
      std::vector<float>& a = acts[m];
      if (stage == 0) {
        for (int i = 0; i < kElems; ++i) a[i] = 100.0f * m + i;
      } else {
        TESSERA_RETURN_IF_ERROR(
            pp.Recv(Tensor{a.data(), DType::kF32, kElems}, stage - 1));
      }
      for (float& x : a) x += 1;
      if (stage + 1 < kStages) {
        TESSERA_RETURN_IF_ERROR(
            pp.Send(Tensor{a.data(), DType::kF32, kElems}, stage + 1));
      }
    }
    for (int m = kMicroBatches - 1; m >= 0; --m) {
      std::vector<float> grad(kElems);
      if (stage + 1 < kStages) {
        TESSERA_RETURN_IF_ERROR(
            pp.Recv(Tensor{grad.data(), DType::kF32, kElems}, stage + 1));
      } else {
        grad = acts[m];  // the last stage's "loss gradient"
      }
      for (int i = 0; i < kElems; ++i) {
        const float want = 100.0f * m + i + kStages;
        if (grad[i] != want) {
          return absl::InternalError(absl::StrCat("stage ", stage, " mb ", m,
                                                  " elem ", i, ": ", grad[i],
                                                  " want ", want));
        }
      }
      if (stage > 0) {
        TESSERA_RETURN_IF_ERROR(
            pp.Send(Tensor{grad.data(), DType::kF32, kElems}, stage - 1));
      }
    }
    return absl::OkStatus();
  });
}

TEST(TcpSendRecvTest, LargeSendsBothWaysBeforeAnyRecv) {
  // 40 MB each way, far more than the kernel's socket buffers: a blocking
  // send would deadlock here; the receiving side must take it eagerly.
  constexpr int64_t kCount = 10'000'000;
  RunTcpAllOk(2, [](int rank, Communicator& comm) -> absl::Status {
    const int peer = 1 - rank;
    std::vector<int32_t> out(kCount), in(kCount, -1);
    for (int64_t i = 0; i < kCount; ++i)
      out[i] = static_cast<int32_t>(i * 3 + rank);
    TESSERA_RETURN_IF_ERROR(
        comm.Send(Tensor{out.data(), DType::kI32, kCount}, peer));
    TESSERA_RETURN_IF_ERROR(
        comm.Recv(Tensor{in.data(), DType::kI32, kCount}, peer));
    for (int64_t i = 0; i < kCount; ++i) {
      if (in[i] != static_cast<int32_t>(i * 3 + peer)) {
        return absl::InternalError(absl::StrCat("element ", i, ": ", in[i]));
      }
    }
    return absl::OkStatus();
  });
}

TEST(TcpSendRecvTest, FifoPerPairWithRandomTiming) {
  constexpr int kMessages = 200;
  RunTcpAllOk(3, [](int rank, Communicator& comm) -> absl::Status {
    std::mt19937 gen(rank);
    auto nap = [&] {
      if (gen() % 3 == 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(gen() % 300));
      }
    };
    for (int m = 0; m < kMessages; ++m) {
      const int64_t size = 1 + m % 17;
      if (rank == 1) {
        for (int src : {0, 2}) {
          std::vector<int32_t> in(size, -1);
          nap();
          TESSERA_RETURN_IF_ERROR(
              comm.Recv(Tensor{in.data(), DType::kI32, size}, src));
          for (int64_t i = 0; i < size; ++i) {
            if (in[i] != src * 100000 + m * 100 + i) {
              return absl::InternalError(absl::StrCat(
                  "message ", m, " from ", src, " elem ", i, ": ", in[i]));
            }
          }
        }
      } else {
        std::vector<int32_t> out(size);
        for (int64_t i = 0; i < size; ++i) out[i] = rank * 100000 + m * 100 + i;
        nap();
        TESSERA_RETURN_IF_ERROR(
            comm.Send(Tensor{out.data(), DType::kI32, size}, 1));
      }
    }
    return absl::OkStatus();
  });
}

TEST(TcpSendRecvTest, SendToSelf) {
  RunTcpAllOk(2, [](int rank, Communicator& comm) -> absl::Status {
    float out[3] = {1.5f, 2.5f, static_cast<float>(rank)}, in[3] = {};
    TESSERA_RETURN_IF_ERROR(comm.Send(Tensor{out, DType::kF32, 3}, rank));
    TESSERA_RETURN_IF_ERROR(comm.Recv(Tensor{in, DType::kF32, 3}, rank));
    if (in[0] != 1.5f || in[1] != 2.5f || in[2] != rank) {
      return absl::InternalError("self message changed");
    }
    return absl::OkStatus();
  });
}

TEST(TcpSendRecvTest, GroupedRecvBeforeSendAndNesting) {
  RunTcpAllOk(2, [](int rank, Communicator& comm) -> absl::Status {
    const int peer = 1 - rank;
    float in = -1, out = static_cast<float>(rank + 10);
    TESSERA_RETURN_IF_ERROR(comm.GroupStart());
    TESSERA_RETURN_IF_ERROR(comm.GroupStart());  // nested
    TESSERA_RETURN_IF_ERROR(comm.Recv(Tensor{&in, DType::kF32, 1}, peer));
    TESSERA_RETURN_IF_ERROR(comm.GroupEnd());
    if (in != -1) return absl::InternalError("inner GroupEnd ran the Recv");
    TESSERA_RETURN_IF_ERROR(comm.Send(Tensor{&out, DType::kF32, 1}, peer));
    TESSERA_RETURN_IF_ERROR(comm.GroupEnd());
    if (in != peer + 10) {
      return absl::InternalError(absl::StrCat("rank ", rank, " got ", in));
    }
    if (comm.GroupEnd().code() != absl::StatusCode::kFailedPrecondition) {
      return absl::InternalError("unbalanced GroupEnd accepted");
    }
    return absl::OkStatus();
  });
}

TEST(TcpSendRecvTest, SizeOrDtypeMismatchFailsTheReceiverNamingBoth) {
  std::vector<absl::Status> recv_status(2);
  RunTcpAllOk(2, [&](int rank, Communicator& comm) -> absl::Status {
    float four[4] = {1, 2, 3, 4};
    if (rank == 0) {
      for (int m = 0; m < 3; ++m) {
        TESSERA_RETURN_IF_ERROR(comm.Send(Tensor{four, DType::kF32, 4}, 1));
      }
      return absl::OkStatus();
    }
    recv_status[0] = comm.Recv(Tensor{four, DType::kF32, 3}, 0);
    recv_status[1] = comm.Recv(Tensor{four, DType::kI32, 4}, 0);
    return comm.Recv(Tensor{four, DType::kF32, 4}, 0);  // still in step
  });
  EXPECT_NE(recv_status[0].message().find(
                "Recv of f32 x 3 from rank 0 at rank 1 on group world: "
                "expected f32 x 3 but the matching Send has f32 x 4"),
            absl::string_view::npos)
      << recv_status[0];
  for (const absl::Status& s : recv_status) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("Send has f32 x 4"), absl::string_view::npos)
        << s;
  }
}

TEST(TcpSendRecvTest, PeerOutOfRange) {
  RunTcpAllOk(2, [](int, Communicator& comm) -> absl::Status {
    float x = 0;
    if (comm.Send(Tensor{&x, DType::kF32, 1}, 2).code() !=
            absl::StatusCode::kInvalidArgument ||
        comm.Recv(Tensor{&x, DType::kF32, 1}, -1).code() !=
            absl::StatusCode::kInvalidArgument) {
      return absl::InternalError("out-of-range peer accepted");
    }
    return absl::OkStatus();
  });
}

}  // namespace
}  // namespace tessera::executor
