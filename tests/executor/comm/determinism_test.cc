// Reductions of inexact floats, on every Communicator implementation, are
// bitwise equal on every rank, equal to a sequential sum in rank order, and
// the same across runs whatever the thread timing (random per-rank sleeps
// between calls); and the in-process and TCP communicators give the same
// bits for the same inputs.
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "core/status_macros.h"
#include "gtest/gtest.h"
#include "tests/executor/comm/communicators.h"

namespace tessera::executor {
namespace {

using testing::CommKind;

constexpr int kRanks = 8;
constexpr int64_t kCount = 3001;

// Rank `rank`'s inputs: floats of mixed magnitudes, whose sum depends on
// the order of the additions.
std::vector<float> Inputs(int rank) {
  std::mt19937 gen(1234 + rank);
  std::uniform_real_distribution<float> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<float> v(kCount);
  for (float& x : v) x = std::ldexp(mantissa(gen), exponent(gen));
  return v;
}

// The raw bytes of every rank's AllReduce and ReduceScatter results of one
// run on `ranks` ranks of a `kind` world, every rank sleeping a random 0-2
// ms before each call.
struct RunResult {
  std::vector<std::vector<uint32_t>> all_reduce_f32;   // by rank
  std::vector<std::vector<uint16_t>> all_reduce_bf16;  // by rank
  std::vector<std::vector<uint32_t>> reduce_scatter;   // by rank, gathered
};

RunResult RunOnce(CommKind kind, uint32_t sleep_seed, int ranks = kRanks) {
  RunResult result;
  result.all_reduce_f32.resize(ranks);
  result.all_reduce_bf16.resize(ranks);
  result.reduce_scatter.resize(ranks);
  testing::RunAllOk(
      kind, ranks, [&](int rank, Communicator& comm) -> absl::Status {
        std::mt19937 gen(sleep_seed * 131 + rank);
        auto nap = [&] {
          std::this_thread::sleep_for(std::chrono::microseconds(gen() % 2000));
        };
        const std::vector<float> in = Inputs(rank);
        std::vector<float> f32 = in;
        nap();
        TESSERA_RETURN_IF_ERROR(comm.AllReduce(
            Tensor{f32.data(), DType::kF32, kCount},
            Tensor{f32.data(), DType::kF32, kCount}, ReduceOp::kSum));
        result.all_reduce_f32[rank].resize(kCount);
        std::memcpy(result.all_reduce_f32[rank].data(), f32.data(), kCount * 4);

        std::vector<uint16_t> bf16(kCount);
        for (int64_t i = 0; i < kCount; ++i) bf16[i] = FloatToBf16(in[i]);
        nap();
        const Tensor bview{bf16.data(), DType::kBF16, kCount};
        TESSERA_RETURN_IF_ERROR(comm.AllReduce(bview, bview, ReduceOp::kSum));
        result.all_reduce_bf16[rank] = bf16;

        // ReduceScatter of the first ranks * (kCount / ranks) elements (8 *
        // 375), then gathered back.
        const int64_t block = kCount / ranks;
        std::vector<float> part(block), gathered(block * ranks);
        nap();
        TESSERA_RETURN_IF_ERROR(comm.ReduceScatter(
            Tensor{const_cast<float*>(in.data()), DType::kF32, block * ranks},
            Tensor{part.data(), DType::kF32, block}, ReduceOp::kSum));
        nap();
        TESSERA_RETURN_IF_ERROR(comm.AllGather(
            Tensor{part.data(), DType::kF32, block},
            Tensor{gathered.data(), DType::kF32, block * ranks}));
        result.reduce_scatter[rank].resize(gathered.size());
        std::memcpy(result.reduce_scatter[rank].data(), gathered.data(),
                    gathered.size() * 4);
        return absl::OkStatus();
      });
  return result;
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

class DeterminismTest : public ::testing::TestWithParam<CommKind> {};

TEST_P(DeterminismTest, BitwiseEqualOnEveryRankAndEqualToRankOrderSum) {
  std::vector<std::vector<float>> inputs;
  for (int r = 0; r < kRanks; ++r) inputs.push_back(Inputs(r));
  const RunResult run = RunOnce(GetParam(), /*sleep_seed=*/1);
  bool order_matters = false;
  for (int64_t i = 0; i < kCount; ++i) {
    float sequential = inputs[0][i];  // ((x0 + x1) + x2) + ...
    float bf16_acc = Bf16ToFloat(FloatToBf16(inputs[0][i]));
    float reversed = inputs[kRanks - 1][i];
    for (int r = 1; r < kRanks; ++r) {
      sequential += inputs[r][i];
      bf16_acc += Bf16ToFloat(FloatToBf16(inputs[r][i]));
      reversed += inputs[kRanks - 1 - r][i];
    }
    order_matters |= Bits(sequential) != Bits(reversed);
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_EQ(run.all_reduce_f32[r][i], Bits(sequential))
          << "rank " << r << " element " << i;
      ASSERT_EQ(run.all_reduce_bf16[r][i], FloatToBf16(bf16_acc))
          << "rank " << r << " element " << i;
      if (i < static_cast<int64_t>(run.reduce_scatter[r].size())) {
        ASSERT_EQ(run.reduce_scatter[r][i], Bits(sequential))
            << "rank " << r << " element " << i;
      }
    }
  }
  EXPECT_TRUE(order_matters) << "inputs too tame to test the order";
}

TEST_P(DeterminismTest, SameBitsAcrossRunsWithRandomTiming) {
  const RunResult first = RunOnce(GetParam(), /*sleep_seed=*/2);
  for (uint32_t seed = 3; seed < 8; ++seed) {
    const RunResult again = RunOnce(GetParam(), seed);
    EXPECT_EQ(again.all_reduce_f32, first.all_reduce_f32) << "seed " << seed;
    EXPECT_EQ(again.all_reduce_bf16, first.all_reduce_bf16) << "seed " << seed;
    EXPECT_EQ(again.reduce_scatter, first.reduce_scatter) << "seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(, DeterminismTest,
                         ::testing::ValuesIn(testing::kCommKinds),
                         testing::CommKindParamName);

// The same reduction order (rank order per element) in both: bitwise equal,
// not just close, on 6 ranks (3001 elements: not a multiple of the group
// size), every rank against every rank.
TEST(CrossImplementationTest, TcpBitwiseEqualToInProcess) {
  constexpr int kParityRanks = 6;
  const RunResult tcp = RunOnce(CommKind::kTcp, /*sleep_seed=*/9, kParityRanks);
  const RunResult inproc =
      RunOnce(CommKind::kInProcess, /*sleep_seed=*/9, kParityRanks);
  // The sums really are order-sensitive: a reversed sequential sum differs
  // somewhere, so this comparison could fail.
  std::vector<float> reversed_sum(kCount, 0);
  for (int r = kParityRanks - 1; r >= 0; --r) {
    const std::vector<float> in = Inputs(r);
    for (int64_t i = 0; i < kCount; ++i) reversed_sum[i] += in[i];
  }
  std::vector<uint32_t> reversed(kCount);
  for (int64_t i = 0; i < kCount; ++i) reversed[i] = Bits(reversed_sum[i]);
  EXPECT_NE(reversed, inproc.all_reduce_f32[0]);
  for (int r = 0; r < kParityRanks; ++r) {
    EXPECT_EQ(tcp.all_reduce_f32[r], inproc.all_reduce_f32[0]) << "rank " << r;
    EXPECT_EQ(tcp.all_reduce_bf16[r], inproc.all_reduce_bf16[0])
        << "rank " << r;
    EXPECT_EQ(tcp.reduce_scatter[r], inproc.reduce_scatter[r]) << "rank " << r;
  }
}

}  // namespace
}  // namespace tessera::executor
