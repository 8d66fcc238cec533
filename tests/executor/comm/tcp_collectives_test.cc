// TcpCommunicator's collectives, with every rank a thread holding its own
// TCP world over loopback: hand-computed results for group sizes 1..8,
// empty, odd and multi-block counts, f32/bf16/i32, sum and max, in place and
// not; bitwise equality with the in-process communicator on inexact floats
// (the same reduction order: every element summed in rank order); and
// messages of tens of MB.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/status_macros.h"
#include "executor/comm/run_ranks.h"
#include "executor/comm/tcp_communicator.h"
#include "executor/comm/tcp_run_ranks.h"
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

constexpr double kGarbage = 99;

// Runs fn on n TCP ranks; a hang becomes a DEADLINE_EXCEEDED failure.
void RunTcpAllOk(int n, const RankFunction& fn) {
  TcpWorldOptions options;
  options.timeout = absl::Seconds(30);
  const std::vector<absl::Status> statuses = RunTcpRanks(n, fn, options);
  ASSERT_EQ(statuses.size(), static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(statuses[r].ok()) << "rank " << r << ": " << statuses[r];
  }
}

class TcpCollectivesTest : public ::testing::TestWithParam<int> {};

TEST_P(TcpCollectivesTest, AllReduce) {
  const int n = GetParam();
  RunTcpAllOk(n, [n](int rank, Communicator& comm) -> absl::Status {
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
              for (int64_t i = 0; i < count; ++i) {
                input[i] = Input(rank, i, dtype);
              }
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

TEST_P(TcpCollectivesTest, AllGather) {
  const int n = GetParam();
  RunTcpAllOk(n, [n](int rank, Communicator& comm) -> absl::Status {
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

TEST_P(TcpCollectivesTest, ReduceScatter) {
  const int n = GetParam();
  RunTcpAllOk(n, [n](int rank, Communicator& comm) -> absl::Status {
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

TEST_P(TcpCollectivesTest, BroadcastFromEveryRootAndBarrier) {
  const int n = GetParam();
  RunTcpAllOk(n, [n](int rank, Communicator& comm) -> absl::Status {
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
    for (int round = 0; round < 5; ++round) {
      TESSERA_RETURN_IF_ERROR(comm.Barrier());
    }
    return absl::OkStatus();
  });
}

INSTANTIATE_TEST_SUITE_P(GroupSizes, TcpCollectivesTest, ::testing::Range(1, 9),
                         [](const ::testing::TestParamInfo<int>& param) {
                           return absl::StrCat("n", param.param);
                         });

TEST(TcpCollectivesTest, RankSizeAndNames) {
  RunTcpAllOk(3, [](int rank, Communicator& comm) -> absl::Status {
    auto& tcp = dynamic_cast<TcpCommunicator&>(comm);
    if (comm.rank() != rank || comm.size() != 3 || tcp.world_rank() != rank ||
        tcp.group_name() != "world") {
      return absl::InternalError(absl::StrCat("rank ", comm.rank(), " size ",
                                              comm.size(), " at ", rank));
    }
    return absl::OkStatus();
  });
}

// Floats of mixed magnitudes, whose sum depends on the order of additions.
std::vector<float> MixedInputs(int rank, int64_t count) {
  std::mt19937 gen(4321 + rank);
  std::uniform_real_distribution<float> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<float> v(count);
  for (float& x : v) x = std::ldexp(mantissa(gen), exponent(gen));
  return v;
}

// Every rank's AllReduce (f32 and bf16) and ReduceScatter (f32) results.
struct Results {
  std::vector<std::vector<float>> all_reduce;
  std::vector<std::vector<uint16_t>> all_reduce_bf16;
  std::vector<std::vector<float>> reduce_scatter;
};

constexpr int kParityRanks = 6;
constexpr int64_t kParityCount = 3001;  // not a multiple of the group size

Results RunParity(bool tcp) {
  Results out;
  out.all_reduce.resize(kParityRanks);
  out.all_reduce_bf16.resize(kParityRanks);
  out.reduce_scatter.resize(kParityRanks);
  const RankFunction fn = [&](int rank, Communicator& comm) -> absl::Status {
    const std::vector<float> in = MixedInputs(rank, kParityCount);
    std::vector<float>& sum = out.all_reduce[rank];
    sum = in;
    TESSERA_RETURN_IF_ERROR(comm.AllReduce(
        Tensor{sum.data(), DType::kF32, kParityCount},
        Tensor{sum.data(), DType::kF32, kParityCount}, ReduceOp::kSum));
    std::vector<uint16_t>& bf16 = out.all_reduce_bf16[rank];
    for (float x : in) bf16.push_back(FloatToBf16(x));
    TESSERA_RETURN_IF_ERROR(comm.AllReduce(
        Tensor{bf16.data(), DType::kBF16, kParityCount},
        Tensor{bf16.data(), DType::kBF16, kParityCount}, ReduceOp::kSum));
    const int64_t block = kParityCount / kParityRanks;
    std::vector<float>& scattered = out.reduce_scatter[rank];
    scattered.resize(block);
    return comm.ReduceScatter(Tensor{const_cast<float*>(in.data()), DType::kF32,
                                     block * kParityRanks},
                              Tensor{scattered.data(), DType::kF32, block},
                              ReduceOp::kSum);
  };
  const std::vector<absl::Status> statuses =
      tcp ? RunTcpRanks(kParityRanks, fn) : RunRanks(kParityRanks, fn);
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
  return out;
}

TEST(TcpCollectivesTest, BitwiseEqualToInProcessAndAcrossRanks) {
  const Results tcp = RunParity(/*tcp=*/true);
  const Results inproc = RunParity(/*tcp=*/false);
  // Same reduction order (rank order per element): bitwise equal, not just
  // close. And the sums really are order-sensitive: a reversed sequential
  // sum differs somewhere, so this comparison could fail.
  std::vector<float> reversed(kParityCount, 0);
  for (int r = kParityRanks - 1; r >= 0; --r) {
    const std::vector<float> in = MixedInputs(r, kParityCount);
    for (int64_t i = 0; i < kParityCount; ++i) reversed[i] += in[i];
  }
  EXPECT_NE(0, std::memcmp(reversed.data(), inproc.all_reduce[0].data(),
                           kParityCount * sizeof(float)));
  for (int r = 0; r < kParityRanks; ++r) {
    EXPECT_EQ(0,
              std::memcmp(tcp.all_reduce[r].data(), inproc.all_reduce[0].data(),
                          kParityCount * sizeof(float)))
        << "rank " << r;
    EXPECT_EQ(tcp.all_reduce_bf16[r], inproc.all_reduce_bf16[0])
        << "rank " << r;
    EXPECT_EQ(0, std::memcmp(tcp.reduce_scatter[r].data(),
                             inproc.reduce_scatter[r].data(),
                             tcp.reduce_scatter[r].size() * sizeof(float)))
        << "rank " << r;
  }
}

TEST(TcpCollectivesTest, TensOfMegabytes) {
  constexpr int kRanks = 4;
  constexpr int64_t kCount = 6'000'001;  // 24 MB of f32, not divisible by 4
  RunTcpAllOk(kRanks, [](int rank, Communicator& comm) -> absl::Status {
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
        return absl::InternalError(absl::StrCat("AllReduce element ", i, " is ",
                                                buf[i], ", want ", want));
      }
    }
    // AllGather of 8 MB per rank into 32 MB.
    constexpr int64_t kPart = 2'000'000;
    std::vector<int32_t> part(kPart), all(kPart * kRanks, -1);
    for (int64_t i = 0; i < kPart; ++i)
      part[i] = static_cast<int32_t>(i ^ rank);
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

}  // namespace
}  // namespace tessera::executor
