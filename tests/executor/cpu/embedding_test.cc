#include "executor/cpu/embedding.h"

#include <vector>

#include "gtest/gtest.h"
#include "tests/executor/cpu/cpu_test_util.h"

namespace tessera::executor::cpu {
namespace {

using cpu_test::CentralDifferences;
using cpu_test::Dot;
using cpu_test::ExpectAllNear;
using cpu_test::RandomVector;

TEST(CpuEmbeddingTest, ForwardPicksRowsAndZeroesForeignTokens) {
  // Shard holding vocabulary rows [2, 4) of a 6-token vocabulary, hidden 2.
  const std::vector<double> table = {20, 21, 30, 31};
  const std::vector<int32_t> tokens = {3, 0, 2, 5, 3};
  std::vector<double> out(10, -1);
  EmbeddingForward<double>(tokens.data(), table.data(), 5, 2, 2, 2, out.data());
  EXPECT_EQ(out, (std::vector<double>{30, 31, 0, 0, 20, 21, 0, 0, 30, 31}));
}

TEST(CpuEmbeddingTest, ShardsSumToTheFullLookup) {
  const int64_t vocab = 11, hidden = 5, n = 17;
  const auto table = RandomVector<double>(vocab * hidden, 1);
  const auto tokens = cpu_test::RandomInts(n, 2, 0, vocab - 1);
  std::vector<double> full(n * hidden);
  EmbeddingForward<double>(tokens.data(), table.data(), n, 0, vocab, hidden,
                           full.data());
  std::vector<double> summed(n * hidden, 0), part(n * hidden);
  for (auto [begin, rows] : {std::pair{0, 4}, {4, 3}, {7, 4}}) {
    EmbeddingForward<double>(tokens.data(), table.data() + begin * hidden, n,
                             begin, rows, hidden, part.data());
    for (size_t i = 0; i < part.size(); ++i) summed[i] += part[i];
  }
  EXPECT_EQ(summed, full);
}

// loss = sum(w * out); the backward adds into a table gradient that already
// holds 0.5 everywhere (accumulation across micro-batches).
TEST(CpuEmbeddingTest, BackwardMatchesFiniteDifferencesAndAdds) {
  const int64_t vocab_rows = 6, begin = 3, hidden = 4, n = 9;
  auto table = RandomVector<double>(vocab_rows * hidden, 3);
  const std::vector<int32_t> tokens = {3, 8, 4, 3, 0, 8, 5, 3, 12};
  const auto w = RandomVector<double>(n * hidden, 4);
  std::vector<double> out(n * hidden);
  auto loss = [&] {
    EmbeddingForward<double>(tokens.data(), table.data(), n, begin, vocab_rows,
                             hidden, out.data());
    return Dot(w, out);
  };
  const auto fd = CentralDifferences(table, loss);
  std::vector<double> dtable(table.size(), 0.5);
  EmbeddingBackward<double>(tokens.data(), w.data(), n, begin, vocab_rows,
                            hidden, dtable.data());
  for (double& g : dtable) g -= 0.5;
  ExpectAllNear(dtable, fd, 1e-9, 1e-7, "dtable");
}

}  // namespace
}  // namespace tessera::executor::cpu
