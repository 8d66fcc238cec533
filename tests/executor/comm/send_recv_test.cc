// Point-to-point on every Communicator implementation: rings and pipeline
// schedules where every rank sends before it receives, large messages sent
// both ways at once (eager: neither Send waits for a Recv), FIFO order per
// pair, sends to oneself, NCCL group semantics, size and peer checks.
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <tuple>
#include <vector>

#include "core/status_macros.h"
#include "gtest/gtest.h"
#include "tests/executor/comm/comm_test_util.h"
#include "tests/executor/comm/communicators.h"

namespace tessera::executor {
namespace {

using testing::CommKind;
using testing::HostBuffer;
using testing::Input;
using testing::kCommKinds;
using testing::RunAllOk;

// (implementation, group size).
class RingTest : public ::testing::TestWithParam<std::tuple<CommKind, int>> {};

TEST_P(RingTest, EveryRankSendsBeforeReceiving) {
  const CommKind kind = std::get<0>(GetParam());
  const int n = std::get<1>(GetParam());
  RunAllOk(kind, n, [n](int rank, Communicator& comm) -> absl::Status {
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

INSTANTIATE_TEST_SUITE_P(GroupSizes, RingTest, testing::EveryKindAndGroupSize(),
                         testing::SizeAndKindParamName);

class SendRecvTest : public ::testing::TestWithParam<CommKind> {};

TEST_P(SendRecvTest, RingInAGroupBothDirections) {
  // Ring attention's exchange: post the receive from the left and the
  // right and the sends to both, in one group.
  constexpr int kRanks = 5;
  RunAllOk(
      GetParam(), kRanks, [](int rank, Communicator& comm) -> absl::Status {
        const int left = (rank + kRanks - 1) % kRanks,
                  right = (rank + 1) % kRanks;
        for (int step = 0; step < 10; ++step) {
          int32_t from_left = -1, from_right = -1, mine = rank * 100 + step;
          TESSERA_RETURN_IF_ERROR(comm.GroupStart());
          TESSERA_RETURN_IF_ERROR(
              comm.Recv(Tensor{&from_left, DType::kI32, 1}, left));
          TESSERA_RETURN_IF_ERROR(
              comm.Recv(Tensor{&from_right, DType::kI32, 1}, right));
          TESSERA_RETURN_IF_ERROR(
              comm.Send(Tensor{&mine, DType::kI32, 1}, right));
          TESSERA_RETURN_IF_ERROR(
              comm.Send(Tensor{&mine, DType::kI32, 1}, left));
          TESSERA_RETURN_IF_ERROR(comm.GroupEnd());
          if (from_left != left * 100 + step ||
              from_right != right * 100 + step) {
            return absl::InternalError(absl::StrCat("rank ", rank, " step ",
                                                    step, ": ", from_left, " ",
                                                    from_right));
          }
        }
        return absl::OkStatus();
      });
}

TEST_P(SendRecvTest, PipelineAllForwardThenAllBackward) {
  // GPipe-like: stage s receives micro-batch m from s-1, adds 1, sends it
  // on; then the gradients flow back the same way. Stages send all their
  // micro-batches before the next stage has received any.
  constexpr int kStages = 4, kMicroBatches = 6, kElems = 33;
  RunAllOk(
      GetParam(), kStages, [](int stage, Communicator& pp) -> absl::Status {
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
              return absl::InternalError(absl::StrCat("stage ", stage, " mb ",
                                                      m, " elem ", i, ": ",
                                                      grad[i], " want ", want));
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

TEST_P(SendRecvTest, LargeSendsBothWaysBeforeAnyRecv) {
  // 40 MB each way, far more than a kernel's socket buffers: a blocking
  // send would deadlock here; the receiving side must take it eagerly.
  constexpr int64_t kCount = 10'000'000;
  RunAllOk(GetParam(), 2, [](int rank, Communicator& comm) -> absl::Status {
    const int peer = 1 - rank;
    std::vector<int32_t> out(kCount), in(kCount, -1);
    for (int64_t i = 0; i < kCount; ++i) {
      out[i] = static_cast<int32_t>(i * 3 + rank);
    }
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

TEST_P(SendRecvTest, FifoPerPairWithRandomTiming) {
  // Rank 0 sends 200 messages of varying sizes to rank 1 while rank 2 sends
  // to rank 1 too; random pauses make some receives wait (direct copy) and
  // some find the message staged.
  constexpr int kMessages = 200;
  RunAllOk(GetParam(), 3, [](int rank, Communicator& comm) -> absl::Status {
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

TEST_P(SendRecvTest, SendToSelf) {
  RunAllOk(GetParam(), 2, [](int rank, Communicator& comm) -> absl::Status {
    float out[3] = {1.5f, 2.5f, static_cast<float>(rank)}, in[3] = {};
    TESSERA_RETURN_IF_ERROR(comm.Send(Tensor{out, DType::kF32, 3}, rank));
    TESSERA_RETURN_IF_ERROR(comm.Recv(Tensor{in, DType::kF32, 3}, rank));
    if (in[0] != 1.5f || in[1] != 2.5f || in[2] != rank) {
      return absl::InternalError("self message changed");
    }
    return absl::OkStatus();
  });
}

TEST_P(SendRecvTest, GroupedRecvBeforeSendDoesNotDeadlock) {
  // Both ranks post the receive first; outside a group this order would
  // wait forever on a blocking send or receive, inside one it is fine.
  RunAllOk(
      GetParam(), 2,
      [](int rank, Communicator& comm) -> absl::Status {
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
      },
      absl::Seconds(10));
}

TEST_P(SendRecvTest, GroupEndWithoutGroupStartFails) {
  RunAllOk(GetParam(), 1, [](int, Communicator& comm) -> absl::Status {
    if (comm.GroupEnd().code() != absl::StatusCode::kFailedPrecondition) {
      return absl::InternalError("unbalanced GroupEnd accepted");
    }
    return absl::OkStatus();
  });
}

TEST_P(SendRecvTest, SizeOrDtypeMismatchFailsTheReceiverNamingBoth) {
  // Staged (the message waits for the Recv) and direct (the Recv waits for
  // the message) deliveries must both check.
  for (bool recv_first : {false, true}) {
    std::vector<absl::Status> recv_status(2);
    const std::vector<absl::Status> statuses = testing::RunRanksOf(
        GetParam(), 2, [&](int rank, Communicator& comm) -> absl::Status {
          float four[4] = {1, 2, 3, 4};
          if (rank == 0) {
            if (recv_first) {
              std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
            TESSERA_RETURN_IF_ERROR(comm.Send(Tensor{four, DType::kF32, 4}, 1));
            TESSERA_RETURN_IF_ERROR(comm.Send(Tensor{four, DType::kF32, 4}, 1));
            return comm.Send(Tensor{four, DType::kF32, 4}, 1);
          }
          if (!recv_first) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
          }
          recv_status[0] = comm.Recv(Tensor{four, DType::kF32, 3}, 0);
          recv_status[1] = comm.Recv(Tensor{four, DType::kI32, 4}, 0);
          return comm.Recv(Tensor{four, DType::kF32, 4}, 0);  // still in step
        });
    EXPECT_TRUE(statuses[0].ok()) << statuses[0];
    EXPECT_TRUE(statuses[1].ok()) << statuses[1];
    EXPECT_NE(recv_status[0].message().find(
                  "Recv of f32 x 3 from rank 0 at rank 1 on group world: "
                  "expected f32 x 3 but the matching Send has f32 x 4"),
              absl::string_view::npos)
        << recv_status[0];
    for (const absl::Status& s : recv_status) {
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
      EXPECT_NE(s.message().find("Send has f32 x 4"), absl::string_view::npos)
          << s;
      EXPECT_NE(s.message().find("from rank 0"), absl::string_view::npos) << s;
    }
  }
}

TEST_P(SendRecvTest, PeerOutOfRange) {
  RunAllOk(GetParam(), 2, [](int, Communicator& comm) -> absl::Status {
    float x = 0;
    const absl::Status send = comm.Send(Tensor{&x, DType::kF32, 1}, 2);
    const absl::Status recv = comm.Recv(Tensor{&x, DType::kF32, 1}, -1);
    if (send.code() != absl::StatusCode::kInvalidArgument ||
        recv.code() != absl::StatusCode::kInvalidArgument) {
      return absl::InternalError("out-of-range peer accepted");
    }
    if (send.message() != "Send: peer 2 is outside the group's ranks [0, 2)" ||
        recv.message() != "Recv: peer -1 is outside the group's ranks [0, 2)") {
      return absl::InternalError(
          absl::StrCat("misworded: ", send.ToString(), "; ", recv.ToString()));
    }
    return absl::OkStatus();
  });
}

INSTANTIATE_TEST_SUITE_P(, SendRecvTest, ::testing::ValuesIn(kCommKinds),
                         testing::CommKindParamName);

}  // namespace
}  // namespace tessera::executor
