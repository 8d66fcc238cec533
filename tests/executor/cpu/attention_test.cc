#include "executor/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"
#include "tests/executor/cpu/cpu_test_util.h"

namespace tessera::executor::cpu {
namespace {

using cpu_test::CentralDifferences;
using cpu_test::Dot;
using cpu_test::ExpectAllNear;
using cpu_test::RandomVector;

constexpr double kInf = INFINITY;

int64_t QNumel(const AttentionShape& s) {
  return s.batch * s.q_len * s.heads * s.head_dim;
}
int64_t KvNumel(const AttentionShape& s) {
  return s.batch * s.kv_len * s.kv_heads * s.head_dim;
}

struct Attended {
  std::vector<double> out;
  std::vector<double> lse;
};

// The definition, one query at a time with every score held: softmax over the
// visible keys (k_pos <= q_pos) of q.k / sqrt(d), query head h reading kv
// head h / (heads / kv_heads). No tiles, no online softmax.
Attended NaiveAttention(const AttentionShape& s, const std::vector<double>& q,
                        const std::vector<double>& k,
                        const std::vector<double>& v,
                        const std::vector<int32_t>& q_pos,
                        const std::vector<int32_t>& k_pos) {
  const int64_t d = s.head_dim;
  Attended r{std::vector<double>(QNumel(s), 0.0),
             std::vector<double>(s.batch * s.heads * s.q_len, -kInf)};
  std::vector<double> scores(s.kv_len);
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t g = h / (s.heads / s.kv_heads);
      for (int64_t i = 0; i < s.q_len; ++i) {
        const double* qi = &q[((b * s.q_len + i) * s.heads + h) * d];
        double mx = -kInf;
        for (int64_t j = 0; j < s.kv_len; ++j) {
          const double* kj = &k[((b * s.kv_len + j) * s.kv_heads + g) * d];
          double dot = 0;
          for (int64_t c = 0; c < d; ++c) dot += qi[c] * kj[c];
          scores[j] = k_pos[j] <= q_pos[i] ? dot / std::sqrt(double(d)) : -kInf;
          mx = std::max(mx, scores[j]);
        }
        if (mx == -kInf) continue;  // no visible key: out 0, lse -inf
        double sum = 0;
        for (int64_t j = 0; j < s.kv_len; ++j) sum += std::exp(scores[j] - mx);
        r.lse[(b * s.heads + h) * s.q_len + i] = mx + std::log(sum);
        double* oi = &r.out[((b * s.q_len + i) * s.heads + h) * d];
        for (int64_t j = 0; j < s.kv_len; ++j) {
          const double p = std::exp(scores[j] - mx) / sum;
          const double* vj = &v[((b * s.kv_len + j) * s.kv_heads + g) * d];
          for (int64_t c = 0; c < d; ++c) oi[c] += p * vj[c];
        }
      }
    }
  }
  return r;
}

// Tokens [begin, begin + len) of a [batch, len_total, heads, d] tensor.
std::vector<double> TokenSlice(const std::vector<double>& x, int64_t batch,
                               int64_t len_total, int64_t row, int64_t begin,
                               int64_t len) {
  std::vector<double> out(batch * len * row);
  for (int64_t b = 0; b < batch; ++b) {
    std::copy_n(x.begin() + (b * len_total + begin) * row, len * row,
                out.begin() + b * len * row);
  }
  return out;
}

void AddTokenSlice(const std::vector<double>& part, int64_t batch,
                   int64_t len_total, int64_t row, int64_t begin, int64_t len,
                   std::vector<double>& x) {
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < len * row; ++i) {
      x[(b * len_total + begin) * row + i] += part[b * len * row + i];
    }
  }
}

// A problem: shape, data and positions.
struct Problem {
  AttentionShape shape;
  std::vector<double> q, k, v;
  std::vector<int32_t> q_pos, k_pos;
};

Problem MakeProblem(AttentionShape s, std::vector<int32_t> q_pos,
                    std::vector<int32_t> k_pos, uint32_t seed) {
  return Problem{s,
                 RandomVector<double>(QNumel(s), seed, -1.5, 1.5),
                 RandomVector<double>(KvNumel(s), seed + 1, -1.5, 1.5),
                 RandomVector<double>(KvNumel(s), seed + 2),
                 std::move(q_pos),
                 std::move(k_pos)};
}

std::vector<int32_t> Iota(int64_t n, int32_t start) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

// Context parallelism's load-balanced split (zigzag): rank r of cp holds
// chunks r and 2 cp - 1 - r of the sequence.
std::vector<int32_t> ZigzagPositions(int64_t seq, int cp, int rank) {
  const int64_t chunk = seq / (2 * cp);
  std::vector<int32_t> pos = Iota(chunk, int32_t(rank * chunk));
  const std::vector<int32_t> tail =
      Iota(chunk, int32_t((2 * cp - 1 - rank) * chunk));
  pos.insert(pos.end(), tail.begin(), tail.end());
  return pos;
}

Attended RunForward(const Problem& p) {
  Attended r{
      std::vector<double>(QNumel(p.shape), 7.0),  // overwritten
      std::vector<double>(p.shape.batch * p.shape.heads * p.shape.q_len)};
  AttentionForward<double>(p.shape, p.q.data(), p.k.data(), p.v.data(),
                           p.q_pos.data(), p.k_pos.data(), false, r.out.data(),
                           r.lse.data());
  return r;
}

void ExpectMatchesNaive(const Problem& p, const char* what) {
  const Attended got = RunForward(p);
  const Attended want =
      NaiveAttention(p.shape, p.q, p.k, p.v, p.q_pos, p.k_pos);
  ExpectAllNear(got.out, want.out, 1e-13, 1e-12,
                testing::Message() << what << " out");
  ExpectAllNear(got.lse, want.lse, 1e-13, 1e-12,
                testing::Message() << what << " lse");
}

TEST(CpuAttentionTest, ForwardMatchesTheDefinition) {
  // Causal self-attention over several tiles (64) with partial last tiles.
  ExpectMatchesNaive(
      MakeProblem({2, 150, 150, 4, 2, 8}, Iota(150, 0), Iota(150, 0), 1),
      "self, GQA 4/2");
  // Multi-head (kv_heads == heads) and multi-query (kv_heads == 1).
  ExpectMatchesNaive(
      MakeProblem({1, 70, 70, 3, 3, 5}, Iota(70, 0), Iota(70, 0), 2), "MHA");
  ExpectMatchesNaive(
      MakeProblem({1, 70, 70, 4, 1, 6}, Iota(70, 0), Iota(70, 0), 3), "MQA");
  // Queries later in the sequence than all keys (a ring step from an
  // earlier rank): nothing masked.
  ExpectMatchesNaive(
      MakeProblem({1, 40, 100, 2, 1, 4}, Iota(40, 200), Iota(100, 0), 4),
      "past block");
  // A key tile starting exactly at the last position of a query tile: one
  // visible pair decides whether the tile may be skipped.
  ExpectMatchesNaive(
      MakeProblem({1, 70, 80, 2, 1, 4}, Iota(70, 0), Iota(80, 63), 8),
      "one visible pair");
  // cp = 2 zigzag: this rank's queries against the other rank's keys.
  ExpectMatchesNaive(
      MakeProblem({2, 64, 64, 4, 2, 8}, ZigzagPositions(256, 2, 0),
                  ZigzagPositions(256, 2, 1), 5),
      "zigzag");
  // Shuffled key positions (no order assumed).
  std::vector<int32_t> shuffled = Iota(130, 0);
  std::reverse(shuffled.begin() + 10, shuffled.end() - 20);
  ExpectMatchesNaive(
      MakeProblem({1, 130, 130, 2, 2, 4}, Iota(130, 0), shuffled, 6),
      "unordered keys");
}

TEST(CpuAttentionTest, RowsWithoutVisibleKeysGiveZeroAndMinusInfinity) {
  // Keys at positions 100.., queries at 90..109: the first ten see nothing.
  Problem p = MakeProblem({1, 20, 30, 2, 1, 4}, Iota(20, 90), Iota(30, 100), 7);
  const Attended got = RunForward(p);
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t i = 0; i < 20; ++i) {
      const double lse = got.lse[h * 20 + i];
      if (i < 10) {
        EXPECT_EQ(lse, -kInf) << "row " << i;
        for (int64_t c = 0; c < 4; ++c) {
          EXPECT_EQ(got.out[(i * 2 + h) * 4 + c], 0.0);
        }
      } else {
        EXPECT_TRUE(std::isfinite(lse)) << "row " << i;
      }
    }
  }
  // Backward: those rows contribute nothing and nothing turns NaN.
  std::vector<double> dout = RandomVector<double>(QNumel(p.shape), 8);
  std::vector<double> dq(QNumel(p.shape)), dk(KvNumel(p.shape)),
      dv(KvNumel(p.shape));
  AttentionBackward<double>(p.shape, dout.data(), p.q.data(), p.k.data(),
                            p.v.data(), got.out.data(), got.lse.data(),
                            p.q_pos.data(), p.k_pos.data(), dq.data(),
                            dk.data(), dv.data());
  for (double g : dq) ASSERT_TRUE(std::isfinite(g));
  for (double g : dk) ASSERT_TRUE(std::isfinite(g));
  for (double g : dv) ASSERT_TRUE(std::isfinite(g));
  for (int64_t i = 0; i < 10; ++i) {
    for (int64_t c = 0; c < 8; ++c) EXPECT_EQ(dq[i * 8 + c], 0.0);
  }
  // A block entirely in the future of every query.
  Problem future = MakeProblem({1, 8, 8, 2, 2, 4}, Iota(8, 0), Iota(8, 50), 9);
  const Attended none = RunForward(future);
  for (double l : none.lse) EXPECT_EQ(l, -kInf);
  for (double o : none.out) EXPECT_EQ(o, 0.0);
}

// Splits the keys into blocks [cuts[i], cuts[i+1]) and runs them as ring
// attention does: the first block writes, the others accumulate.
Attended RunBlocks(const Problem& p, const std::vector<int64_t>& cuts) {
  const AttentionShape& s = p.shape;
  const int64_t row = s.kv_heads * s.head_dim;
  Attended r{std::vector<double>(QNumel(s)),
             std::vector<double>(s.batch * s.heads * s.q_len)};
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    AttentionShape bs = s;
    bs.kv_len = cuts[i + 1] - cuts[i];
    const auto k = TokenSlice(p.k, s.batch, s.kv_len, row, cuts[i], bs.kv_len);
    const auto v = TokenSlice(p.v, s.batch, s.kv_len, row, cuts[i], bs.kv_len);
    AttentionForward<double>(bs, p.q.data(), k.data(), v.data(), p.q_pos.data(),
                             p.k_pos.data() + cuts[i], i > 0, r.out.data(),
                             r.lse.data());
  }
  return r;
}

struct Grads {
  std::vector<double> dq, dk, dv;
};

// The backward of each block given the final (out, lse); dq accumulates
// across calls, dk/dv land in their block's rows.
Grads BackwardBlocks(const Problem& p, const Attended& fwd,
                     const std::vector<double>& dout,
                     const std::vector<int64_t>& cuts) {
  const AttentionShape& s = p.shape;
  const int64_t row = s.kv_heads * s.head_dim;
  Grads g{std::vector<double>(QNumel(s)), std::vector<double>(KvNumel(s)),
          std::vector<double>(KvNumel(s))};
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    AttentionShape bs = s;
    bs.kv_len = cuts[i + 1] - cuts[i];
    const auto k = TokenSlice(p.k, s.batch, s.kv_len, row, cuts[i], bs.kv_len);
    const auto v = TokenSlice(p.v, s.batch, s.kv_len, row, cuts[i], bs.kv_len);
    std::vector<double> dk(k.size(), 0.0), dv(v.size(), 0.0);
    AttentionBackward<double>(bs, dout.data(), p.q.data(), k.data(), v.data(),
                              fwd.out.data(), fwd.lse.data(), p.q_pos.data(),
                              p.k_pos.data() + cuts[i], g.dq.data(), dk.data(),
                              dv.data());
    AddTokenSlice(dk, s.batch, s.kv_len, row, cuts[i], bs.kv_len, g.dk);
    AddTokenSlice(dv, s.batch, s.kv_len, row, cuts[i], bs.kv_len, g.dv);
  }
  return g;
}

TEST(CpuAttentionTest, BlockMergeEqualsOneCall) {
  // Causal, 2 and 3 key blocks (uneven, crossing tiles); then zigzag.
  Problem p =
      MakeProblem({2, 140, 140, 4, 2, 8}, Iota(140, 0), Iota(140, 0), 11);
  const Attended whole = RunForward(p);
  for (const std::vector<int64_t>& cuts :
       {std::vector<int64_t>{0, 70, 140}, {0, 33, 101, 140}, {0, 5, 140}}) {
    const Attended merged = RunBlocks(p, cuts);
    const auto msg = testing::Message() << cuts.size() - 1 << " blocks";
    ExpectAllNear(merged.out, whole.out, 1e-13, 1e-12, msg);
    ExpectAllNear(merged.lse, whole.lse, 1e-13, 1e-12, msg);
  }
  Problem z = MakeProblem({1, 32, 128, 2, 1, 8}, ZigzagPositions(128, 2, 1),
                          Iota(128, 0), 12);
  const Attended z_whole = RunForward(z);
  const Attended z_merged = RunBlocks(z, {0, 32, 64, 96, 128});
  ExpectAllNear(z_merged.out, z_whole.out, 1e-13, 1e-12, "zigzag out");
  ExpectAllNear(z_merged.lse, z_whole.lse, 1e-13, 1e-12, "zigzag lse");
}

// Starting from lse = -inf and garbage (NaN) in out, accumulating every block
// gives the single call's result, rows that never see a key included.
TEST(CpuAttentionTest, AccumulatingIntoAnEmptyRunningResult) {
  Problem p = MakeProblem({1, 40, 60, 4, 2, 8}, Iota(40, 10), Iota(60, 0), 15);
  p.q_pos[0] = -5;  // sees no key at all
  const Attended whole = RunForward(p);
  const AttentionShape& s = p.shape;
  const int64_t row = s.kv_heads * s.head_dim;
  Attended r{std::vector<double>(QNumel(s), NAN),
             std::vector<double>(s.batch * s.heads * s.q_len, -kInf)};
  for (const auto& [begin, len] : {std::pair{40, 20}, {0, 40}}) {
    AttentionShape bs = s;
    bs.kv_len = len;
    const auto k = TokenSlice(p.k, s.batch, s.kv_len, row, begin, len);
    const auto v = TokenSlice(p.v, s.batch, s.kv_len, row, begin, len);
    AttentionForward<double>(bs, p.q.data(), k.data(), v.data(), p.q_pos.data(),
                             p.k_pos.data() + begin, true, r.out.data(),
                             r.lse.data());
  }
  ExpectAllNear(r.out, whole.out, 1e-13, 1e-12, "out");
  ExpectAllNear(r.lse, whole.lse, 1e-13, 1e-12, "lse");
}

TEST(CpuAttentionTest, BackwardSummedOverBlocksEqualsOneCall) {
  Problem p =
      MakeProblem({2, 140, 140, 4, 2, 8}, Iota(140, 0), Iota(140, 0), 13);
  const Attended fwd = RunForward(p);
  const auto dout = RandomVector<double>(QNumel(p.shape), 14);
  const Grads whole = BackwardBlocks(p, fwd, dout, {0, 140});
  for (const std::vector<int64_t>& cuts :
       {std::vector<int64_t>{0, 70, 140}, {0, 33, 101, 140}}) {
    const Grads g = BackwardBlocks(p, fwd, dout, cuts);
    const auto msg = testing::Message() << cuts.size() - 1 << " blocks";
    ExpectAllNear(g.dq, whole.dq, 1e-12, 1e-11, msg);
    ExpectAllNear(g.dk, whole.dk, 1e-12, 1e-11, msg);
    ExpectAllNear(g.dv, whole.dv, 1e-12, 1e-11, msg);
  }
}

// loss = sum(w * out) of the (possibly block-merged) forward; its gradient
// with respect to q, k, v by central differences against the backward
// (summed over the same blocks).
void CheckGradients(Problem p, const std::vector<int64_t>& cuts,
                    const char* what) {
  const auto w = RandomVector<double>(QNumel(p.shape), 99);
  auto loss = [&] { return Dot(w, RunBlocks(p, cuts).out); };
  const auto fd_q = CentralDifferences(p.q, loss);
  const auto fd_k = CentralDifferences(p.k, loss);
  const auto fd_v = CentralDifferences(p.v, loss);
  const Grads g = BackwardBlocks(p, RunBlocks(p, cuts), w, cuts);
  ExpectAllNear(g.dq, fd_q, 1e-8, 1e-6, testing::Message() << what << " dq");
  ExpectAllNear(g.dk, fd_k, 1e-8, 1e-6, testing::Message() << what << " dk");
  ExpectAllNear(g.dv, fd_v, 1e-8, 1e-6, testing::Message() << what << " dv");
}

TEST(CpuAttentionTest, GradientsMatchFiniteDifferences) {
  const int64_t kv = 12;
  CheckGradients(
      MakeProblem({2, kv, kv, 4, 2, 4}, Iota(kv, 0), Iota(kv, 0), 21), {0, kv},
      "causal GQA");
  CheckGradients(MakeProblem({1, 9, 9, 2, 2, 3}, Iota(9, 0), Iota(9, 0), 22),
                 {0, 9}, "MHA");
  // Rows 0..3 see no key (positions 0..3 against keys from 4 on).
  CheckGradients(MakeProblem({1, 10, 8, 2, 1, 4}, Iota(10, 0), Iota(8, 4), 23),
                 {0, 8}, "rows without keys");
}

TEST(CpuAttentionTest, GradientsThroughTheBlockMergeMatchFiniteDifferences) {
  CheckGradients(
      MakeProblem({1, 12, 12, 4, 2, 4}, Iota(12, 0), Iota(12, 0), 31),
      {0, 5, 12}, "two blocks");
  CheckGradients(
      MakeProblem({1, 12, 12, 2, 1, 4}, Iota(12, 0), Iota(12, 0), 32),
      {0, 4, 8, 12}, "three blocks");
}

TEST(CpuAttentionTest, ContextParallelPositionsGradients) {
  // cp = 2 zigzag over 24 tokens: rank 0 holds [0,6) + [18,24), rank 1
  // [6,18). Rank 0's queries against both ranks' keys, one block each.
  std::vector<int32_t> k_pos = ZigzagPositions(24, 2, 0);
  const std::vector<int32_t> other = ZigzagPositions(24, 2, 1);
  k_pos.insert(k_pos.end(), other.begin(), other.end());
  CheckGradients(
      MakeProblem({1, 12, 24, 4, 2, 4}, ZigzagPositions(24, 2, 0), k_pos, 41),
      {0, 12, 24}, "zigzag");
}

// Several query tiles (128 rows / 4 heads per kv head = 32 tokens) and key
// tiles (64 tokens) against finite differences directly.
TEST(CpuAttentionTest, MultiTileGradientsMatchFiniteDifferences) {
  CheckGradients(
      MakeProblem({1, 70, 70, 4, 1, 2}, Iota(70, 0), Iota(70, 0), 51), {0, 70},
      "70 tokens");
}

TEST(CpuAttentionTest, FloatKernelTracksDouble) {
  Problem p =
      MakeProblem({2, 100, 100, 4, 2, 16}, Iota(100, 0), Iota(100, 0), 61);
  const Attended want = RunForward(p);
  const auto dout = RandomVector<double>(QNumel(p.shape), 62);
  const Grads gwant = BackwardBlocks(p, want, dout, {0, 100});
  auto f = [](const std::vector<double>& x) {
    return std::vector<float>(x.begin(), x.end());
  };
  const auto q = f(p.q), k = f(p.k), v = f(p.v), df = f(dout);
  std::vector<float> out(q.size()), lse(want.lse.size());
  AttentionForward<float>(p.shape, q.data(), k.data(), v.data(), p.q_pos.data(),
                          p.k_pos.data(), false, out.data(), lse.data());
  ExpectAllNear(out, want.out, 1e-5, 1e-5, "out");
  ExpectAllNear(lse, want.lse, 1e-5, 1e-5, "lse");
  std::vector<float> dq(q.size()), dk(k.size()), dv(v.size());
  AttentionBackward<float>(p.shape, df.data(), q.data(), k.data(), v.data(),
                           out.data(), lse.data(), p.q_pos.data(),
                           p.k_pos.data(), dq.data(), dk.data(), dv.data());
  ExpectAllNear(dq, gwant.dq, 1e-4, 1e-4, "dq");
  ExpectAllNear(dk, gwant.dk, 1e-4, 1e-4, "dk");
  ExpectAllNear(dv, gwant.dv, 1e-4, 1e-4, "dv");
}

}  // namespace
}  // namespace tessera::executor::cpu
