#include "executor/cpu/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "tests/executor/cpu/cpu_test_util.h"

namespace tessera::executor::cpu {
namespace {

using cpu_test::CentralDifferences;
using cpu_test::ExpectAllNear;
using cpu_test::RandomVector;

// Runs the three steps over `shards` vocabulary shards (boundaries in
// `cuts`), combining them as the engine does over tp: max of the row maxima,
// sum of the stats. Returns per-token losses (from shard 0; every shard must
// agree) and the full dlogits reassembled from the shards.
struct ShardedResult {
  std::vector<double> loss;
  std::vector<double> dlogits;
};

ShardedResult RunSharded(const std::vector<double>& logits,
                         const std::vector<int32_t>& targets, int64_t tokens,
                         int64_t vocab, const std::vector<int64_t>& cuts,
                         double grad_scale) {
  const size_t shards = cuts.size() - 1;
  // Each shard's logits are its own contiguous [tokens, rows] buffer.
  std::vector<std::vector<double>> local(shards);
  for (size_t s = 0; s < shards; ++s) {
    const int64_t rows = cuts[s + 1] - cuts[s];
    local[s].resize(tokens * rows);
    for (int64_t t = 0; t < tokens; ++t) {
      std::copy_n(logits.begin() + t * vocab + cuts[s], rows,
                  local[s].begin() + t * rows);
    }
  }
  std::vector<double> row_max(tokens, -INFINITY), part(2 * tokens);
  for (size_t s = 0; s < shards; ++s) {
    LogitsRowMax<double>(local[s].data(), tokens, cuts[s + 1] - cuts[s],
                         part.data());
    for (int64_t t = 0; t < tokens; ++t) {
      row_max[t] = std::max(row_max[t], part[t]);  // AllReduce(max)
    }
  }
  std::vector<double> stats(2 * tokens, 0.0);
  for (size_t s = 0; s < shards; ++s) {
    LogitsSumExpAndTarget<double>(local[s].data(), targets.data(),
                                  row_max.data(), tokens, cuts[s],
                                  cuts[s + 1] - cuts[s], part.data());
    for (int64_t i = 0; i < 2 * tokens; ++i) stats[i] += part[i];  // sum
  }
  ShardedResult result{std::vector<double>(tokens),
                       std::vector<double>(tokens * vocab)};
  std::vector<double> loss(tokens);
  for (size_t s = 0; s < shards; ++s) {
    const int64_t rows = cuts[s + 1] - cuts[s];
    // dlogits aliases the shard's logits, as the engine may do.
    CrossEntropyBackward<double>(
        local[s].data(), targets.data(), row_max.data(), stats.data(), tokens,
        cuts[s], rows, grad_scale, loss.data(), local[s].data());
    if (s == 0) result.loss = loss;
    EXPECT_EQ(loss, result.loss) << "shard " << s << " disagrees on the loss";
    for (int64_t t = 0; t < tokens; ++t) {
      std::copy_n(local[s].begin() + t * rows, rows,
                  result.dlogits.begin() + t * vocab + cuts[s]);
    }
  }
  return result;
}

TEST(CpuCrossEntropyTest, LossByHand) {
  // logits [1, 2, 3], target 2: loss = log(e + e^2 + e^3) - 3.
  const std::vector<double> logits = {1, 2, 3};
  const std::vector<int32_t> targets = {2};
  const ShardedResult r = RunSharded(logits, targets, 1, 3, {0, 3}, 1.0);
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_NEAR(r.loss[0], std::log(z) - 3, 1e-15);
  EXPECT_NEAR(r.dlogits[0], std::exp(1.0) / z, 1e-15);
  EXPECT_NEAR(r.dlogits[2], std::exp(3.0) / z - 1, 1e-15);
}

// The vocabulary split into 1 to 4 shards (uneven, one shard without any
// target) gives the same loss; the reassembled dlogits match finite
// differences of the total loss grad_scale * sum_t loss[t].
TEST(CpuCrossEntropyTest, ShardedGradientMatchesFiniteDifferences) {
  const int64_t tokens = 6, vocab = 13;
  auto logits = RandomVector<double>(tokens * vocab, 1, -3, 3);
  const std::vector<int32_t> targets = {0, 12, 5, 6, 5, 11};
  const double grad_scale = 1.0 / tokens;
  const std::vector<std::vector<int64_t>> splits = {
      {0, 13}, {0, 6, 13}, {0, 4, 5, 13}, {0, 3, 7, 10, 13}};
  const ShardedResult whole =
      RunSharded(logits, targets, tokens, vocab, splits[0], grad_scale);
  for (const auto& cuts : splits) {
    auto total_loss = [&] {
      const ShardedResult r =
          RunSharded(logits, targets, tokens, vocab, cuts, grad_scale);
      double sum = 0;
      for (double l : r.loss) sum += l;
      return grad_scale * sum;
    };
    const auto fd = CentralDifferences(logits, total_loss);
    const ShardedResult r =
        RunSharded(logits, targets, tokens, vocab, cuts, grad_scale);
    const auto msg = testing::Message() << cuts.size() - 1 << " shards";
    ExpectAllNear(r.loss, whole.loss, 1e-14, 1e-14, msg);
    ExpectAllNear(r.dlogits, fd, 1e-9, 1e-7, msg);
  }
}

TEST(CpuCrossEntropyTest, LargeLogitsStayFinite) {
  const std::vector<float> logits = {1000.f, 999.f, -1000.f, 0.f};
  const std::vector<int32_t> targets = {1};
  float row_max, stats[2], loss;
  std::vector<float> dlogits(4);
  LogitsRowMax<float>(logits.data(), 1, 4, &row_max);
  LogitsSumExpAndTarget<float>(logits.data(), targets.data(), &row_max, 1, 0, 4,
                               stats);
  CrossEntropyBackward<float>(logits.data(), targets.data(), &row_max, stats, 1,
                              0, 4, 1.f, &loss, dlogits.data());
  EXPECT_NEAR(loss, std::log1p(std::exp(1.0)), 1e-4);  // log(1 + e)
  for (float g : dlogits) EXPECT_TRUE(std::isfinite(g));
}

}  // namespace
}  // namespace tessera::executor::cpu
