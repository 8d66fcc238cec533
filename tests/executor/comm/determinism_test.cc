// Reductions of inexact floats are bitwise equal on every rank, equal to a
// sequential sum in rank order, and the same across runs whatever the thread
// timing (random per-rank sleeps between calls).
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "core/status_macros.h"
#include "executor/comm/run_ranks.h"
#include "gtest/gtest.h"
#include "tests/executor/comm/comm_test_util.h"

namespace tessera::executor {
namespace {

using testing::HostBuffer;
using testing::RunAllOk;

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
// run, with `sleepy` ranks sleeping a random 0-2 ms before each call.
struct RunResult {
  std::vector<std::vector<uint32_t>> all_reduce_f32;   // by rank
  std::vector<std::vector<uint16_t>> all_reduce_bf16;  // by rank
  std::vector<std::vector<uint32_t>> reduce_scatter;   // by rank, gathered
};

RunResult RunOnce(uint32_t sleep_seed) {
  RunResult result;
  result.all_reduce_f32.resize(kRanks);
  result.all_reduce_bf16.resize(kRanks);
  result.reduce_scatter.resize(kRanks);
  RunAllOk(kRanks, [&](int rank, Communicator& comm) -> absl::Status {
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

    // ReduceScatter of the first 8 * 375 elements, then gathered back.
    const int64_t block = kCount / kRanks;
    std::vector<float> part(block), gathered(block * kRanks);
    nap();
    TESSERA_RETURN_IF_ERROR(comm.ReduceScatter(
        Tensor{const_cast<float*>(in.data()), DType::kF32, block * kRanks},
        Tensor{part.data(), DType::kF32, block}, ReduceOp::kSum));
    nap();
    TESSERA_RETURN_IF_ERROR(
        comm.AllGather(Tensor{part.data(), DType::kF32, block},
                       Tensor{gathered.data(), DType::kF32, block * kRanks}));
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

TEST(DeterminismTest, BitwiseEqualOnEveryRankAndEqualToRankOrderSum) {
  std::vector<std::vector<float>> inputs;
  for (int r = 0; r < kRanks; ++r) inputs.push_back(Inputs(r));
  const RunResult run = RunOnce(/*sleep_seed=*/1);
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

TEST(DeterminismTest, SameBitsAcrossRunsWithRandomTiming) {
  const RunResult first = RunOnce(/*sleep_seed=*/2);
  for (uint32_t seed = 3; seed < 8; ++seed) {
    const RunResult again = RunOnce(seed);
    EXPECT_EQ(again.all_reduce_f32, first.all_reduce_f32) << "seed " << seed;
    EXPECT_EQ(again.all_reduce_bf16, first.all_reduce_bf16) << "seed " << seed;
    EXPECT_EQ(again.reduce_scatter, first.reduce_scatter) << "seed " << seed;
  }
}

}  // namespace
}  // namespace tessera::executor
