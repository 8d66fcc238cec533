#include "costmodel/search/search.h"

#include <map>
#include <set>
#include <string>

#include "gtest/gtest.h"

namespace tessera::costmodel {
namespace {

std::vector<int64_t> DivisorsOf(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i <= n; ++i) {
    if (n % i == 0) d.push_back(i);
  }
  return d;
}

// `tiny` (4 layers, 8 heads, 4 kv heads) on 2 nodes of 4 GPUs whose memory
// is small enough that some layouts do not fit; 36-token sequences make some
// cp (36 % (2*4) != 0) and sp (36 % 8 != 0) choices invalid.
Workload SmallWorkload(int64_t nodes = 2) {
  GpuSpec gpu = *GpuPreset("h100-sxm");
  gpu.memory_bytes = 10 << 20;  // 10 MiB
  return Workload{*ModelPreset("tiny"), MakeCluster(gpu, nodes, 4),
                  TrainingConfig{.global_batch = 16, .seq_len = 36}};
}

Calibration NoFixedOverhead() {
  Calibration c;
  c.memory_fixed_overhead_gib = 0;
  return c;
}

struct Brute {
  std::map<std::string, int64_t> kinds;  // "feasible" or the reason's field
  std::vector<LayoutEvaluation> feasible;
  int64_t searched = 0;
};

// The search space as search.cc documents it, enumerated independently and
// judged by PredictLayout (core's ResolveLayout and CheckLayoutFitsModel).
Brute BruteForce(const Workload& w, const Calibration& c) {
  Brute b;
  const ModelConfig& m = w.model;
  const int64_t world = w.cluster.world_size();
  for (int64_t tp : DivisorsOf(world)) {
    if (tp > m.heads) continue;
    for (bool sp : {false, true}) {
      if (sp && tp == 1) continue;
      for (int64_t pp : DivisorsOf(world / tp)) {
        if (pp > m.layers) continue;
        for (int64_t vpp = 1; vpp <= m.layers; ++vpp) {
          if (vpp > 1 && (pp == 1 || m.layers % (pp * vpp) != 0)) continue;
          for (int64_t cp : DivisorsOf(world / (tp * pp))) {
            if (cp > 1 && 2 * cp > w.training.seq_len) continue;
            const int64_t dp = world / (tp * pp * cp);
            for (int64_t mb : DivisorsOf(w.training.global_batch)) {
              for (Recompute r : {Recompute::kNone, Recompute::kSelective,
                                  Recompute::kFull}) {
                for (int64_t zero = 0; zero <= 3; ++zero) {
                  for (int64_t sg :
                       zero == 0 ? std::vector<int64_t>{0} : DivisorsOf(dp)) {
                    Layout l{.tp = tp,
                             .sp = sp,
                             .pp = pp,
                             .vpp = vpp,
                             .cp = cp,
                             .zero = zero,
                             .shard_group = sg,
                             .micro_batch = mb,
                             .recompute = r};
                    LayoutEvaluation e = PredictLayout(w, l, c);
                    ++b.searched;
                    if (e.feasible) {
                      ++b.kinds["feasible"];
                      b.feasible.push_back(e);
                    } else {
                      ++b.kinds[e.reason.substr(0, e.reason.find(':'))];
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return b;
}

// The search of `w` with every feasible layout kept, checked against the
// brute force: the same layouts searched, rejected for the same reasons.
SearchResult SearchAgreeingWithBruteForce(const Workload& w,
                                          const Calibration& c) {
  absl::StatusOr<SearchResult> r = SearchLayouts(w, c, SearchOptions{.top = 0});
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return SearchResult{};
  const Brute b = BruteForce(w, c);
  std::map<std::string, int64_t> kinds = r->rejected;
  kinds["feasible"] = r->feasible;
  EXPECT_EQ(kinds, b.kinds);
  EXPECT_EQ(r->searched, b.searched);
  return *std::move(r);
}

TEST(SearchTest, AgreesWithCoreRulesLayoutByLayout) {
  const Workload w = SmallWorkload();
  const Calibration c = NoFixedOverhead();
  SearchResult r = SearchAgreeingWithBruteForce(w, c);
  int64_t rejected = 0;
  for (const auto& [kind, n] : r.rejected) rejected += n;
  EXPECT_EQ(r.feasible + rejected, r.searched);
  // The space exercises every kind of rejection that can occur here.
  for (const char* kind : {"memory", "layout.micro_batch", "layout.vpp",
                           "layout.tp", "layout.cp", "layout.sp"}) {
    EXPECT_GT(r.rejected[kind], 0) << kind;
  }
  EXPECT_GT(r.feasible, 0);
  EXPECT_EQ(r.candidates.size(), static_cast<size_t>(r.feasible));
}

TEST(SearchTest, AgreesWithCoreRulesWhereTheBatchDoesNotSplit) {
  // 3 nodes of 4 GPUs and 16 sequences: dp 3, 6 and 12 divide no global
  // batch / micro-batch, so whole (tp, pp, cp) blocks fail on the
  // micro-batch at every vpp (the search counts them at once).
  const Workload w = SmallWorkload(3);
  SearchResult r = SearchAgreeingWithBruteForce(w, NoFixedOverhead());
  EXPECT_GT(r.rejected.at("layout.micro_batch"), 0);
  EXPECT_GT(r.feasible, 0);
}

TEST(SearchTest, RanksAndFindsTheParetoFront) {
  const Workload w = SmallWorkload();
  const Calibration c = NoFixedOverhead();
  absl::StatusOr<SearchResult> r = SearchLayouts(w, c, SearchOptions{.top = 5});
  ASSERT_TRUE(r.ok()) << r.status();
  const Brute b = BruteForce(w, c);
  ASSERT_EQ(r->candidates.size(), 5u);
  double best_tps = 0, best_tpj = 0;
  for (const LayoutEvaluation& e : b.feasible) {
    best_tps = std::max(best_tps, e.prediction.tokens_per_s);
    best_tpj = std::max(best_tpj, e.prediction.tokens_per_joule);
  }
  for (size_t i = 1; i < r->candidates.size(); ++i) {
    EXPECT_GE(r->candidates[i - 1].prediction.tokens_per_s,
              r->candidates[i].prediction.tokens_per_s);
    EXPECT_TRUE(r->candidates[i].feasible);
  }
  EXPECT_EQ(r->best_throughput.layout, r->candidates.front().layout);
  EXPECT_EQ(r->best_throughput.prediction.tokens_per_s, best_tps);
  EXPECT_EQ(r->best_energy.prediction.tokens_per_joule, best_tpj);
  // The front: exactly the (tokens/s, tokens/J) values no layout beats in
  // both, brute force.
  std::set<std::pair<double, double>> expected;
  for (const LayoutEvaluation& e : b.feasible) {
    const double x = e.prediction.tokens_per_s,
                 y = e.prediction.tokens_per_joule;
    bool dominated = false;
    for (const LayoutEvaluation& o : b.feasible) {
      const double ox = o.prediction.tokens_per_s;
      const double oy = o.prediction.tokens_per_joule;
      if (ox >= x && oy >= y && (ox > x || oy > y)) dominated = true;
    }
    if (!dominated) expected.insert({x, y});
  }
  std::set<std::pair<double, double>> got;
  for (size_t i = 0; i < r->pareto.size(); ++i) {
    const Prediction& p = r->pareto[i].prediction;
    got.insert({p.tokens_per_s, p.tokens_per_joule});
    if (i > 0) {
      EXPECT_GT(r->pareto[i - 1].prediction.tokens_per_s, p.tokens_per_s);
    }
  }
  EXPECT_EQ(got, expected);
  EXPECT_EQ(got.size(), r->pareto.size());
}

TEST(SearchTest, RejectsBadInputNamingTheField) {
  Workload w = SmallWorkload();
  w.training.seq_len = 0;
  absl::StatusOr<SearchResult> r = SearchLayouts(w, Calibration{}, {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("training.seq_len"),
            absl::string_view::npos);
  EXPECT_NE(
      SearchLayouts(SmallWorkload(), Calibration{}, SearchOptions{.top = -1})
          .status()
          .message()
          .find("search.top"),
      absl::string_view::npos);
  // tiny on 64 GPUs with 2-token sequences: tp <= 8, pp <= 4, cp 1, so dp >= 2
  // and one sequence per step cannot be split.
  Workload one{*ModelPreset("tiny"), MakeCluster(*GpuPreset("h100-sxm"), 8, 8),
               TrainingConfig{.global_batch = 1, .seq_len = 2}};
  r = SearchLayouts(one, Calibration{}, {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("training.global_batch"),
            absl::string_view::npos);
}

TEST(SearchTest, NothingFitsIsAnAnswerNotAnError) {
  Workload w{*ModelPreset("llama3-405b"),
             MakeCluster(*GpuPreset("h100-sxm"), 1, 8),
             TrainingConfig{.global_batch = 8, .seq_len = 8192}};
  absl::StatusOr<SearchResult> r = SearchLayouts(w, Calibration{}, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->feasible, 0);
  EXPECT_GT(r->rejected["memory"], 0);
  EXPECT_TRUE(r->candidates.empty());
  EXPECT_FALSE(r->best_throughput.feasible);
  EXPECT_TRUE(r->pareto.empty());
}

}  // namespace
}  // namespace tessera::costmodel

namespace tessera::costmodel {
namespace {

// search.candidates: exactly the given layouts, each judged as PredictLayout
// judges it, ranked as the full search ranks them.
TEST(SearchCandidatesTest, OnlyTheGivenLayoutsRankedWithTheirRejections) {
  const Workload w = SmallWorkload();
  const Calibration c = NoFixedOverhead();
  SearchOptions all;
  all.top = 0;
  const SearchResult full = *SearchLayouts(w, c, all);
  ASSERT_GE(full.candidates.size(), 4u);
  // Three layouts of distinct predicted speed (ties rank by the order given
  // here and by enumeration order there).
  std::vector<LayoutEvaluation> pick = {full.candidates[0]};
  for (const LayoutEvaluation& e : full.candidates) {
    if (pick.size() < 3 &&
        e.prediction.tokens_per_s < pick.back().prediction.tokens_per_s) {
      pick.push_back(e);
    }
  }
  ASSERT_EQ(pick.size(), 3u);
  SearchOptions o;
  o.top = 0;
  // The three in reverse order, one of them twice (unresolved: dp
  // derived), and one the rules refuse.
  o.candidates = {pick[2].layout, pick[0].layout, pick[1].layout};
  Layout again = pick[0].layout;
  again.dp = 0;
  again.grad_accum = 0;
  o.candidates.push_back(again);
  Layout bad;
  bad.tp = 3;  // does not divide the world of 8
  o.candidates.push_back(bad);
  absl::StatusOr<SearchResult> r = SearchLayouts(w, c, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->searched, 4);
  EXPECT_EQ(r->feasible, 3);
  ASSERT_EQ(r->candidates.size(), 3u);
  EXPECT_EQ(r->candidates[0].layout, pick[0].layout);
  EXPECT_EQ(r->candidates[1].layout, pick[1].layout);
  EXPECT_EQ(r->candidates[2].layout, pick[2].layout);
  EXPECT_DOUBLE_EQ(r->candidates[0].prediction.tokens_per_s,
                   pick[0].prediction.tokens_per_s);
  EXPECT_EQ(r->best_throughput.layout, pick[0].layout);
  EXPECT_EQ(r->rejected.size(), 1u);
  EXPECT_EQ(r->rejected.begin()->second, 1);
  EXPECT_FALSE(r->pareto.empty());
  // top keeps the best of them.
  o.top = 1;
  r = SearchLayouts(w, c, o);
  ASSERT_EQ(r->candidates.size(), 1u);
  EXPECT_EQ(r->candidates[0].layout, pick[0].layout);
  // Nothing feasible among them: no best, the reason says so.
  o.candidates = {bad};
  r = SearchLayouts(w, c, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->feasible, 0);
  EXPECT_TRUE(r->candidates.empty());
  EXPECT_NE(r->best_throughput.reason.find("among the candidates"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::costmodel
