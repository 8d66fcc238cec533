// Trial queries within and across studies (the history): every filter and
// sort key checked against a brute-force filter written here over the same
// trials, plus the query plans that show the history is served by indexes.
#include <algorithm>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "db/sqlite_trial_store.h"
#include "gtest/gtest.h"
#include "tests/db/test_util.h"

namespace tessera::db {
namespace {

using ::tessera::db::testing::SampleResult;
using ::tessera::db::testing::SampleStudy;
using ::tessera::db::testing::SampleTrial;
using ::tessera::db::testing::StoreTest;
using ::tessera::db::testing::With;

// The value a sort key reads from a trial; nullopt sorts last.
std::optional<double> SortValue(const Trial& t, const Study& s,
                                absl::string_view key) {
  (void)s;
  const TrialMeasurement* m = t.measured ? &*t.measured : nullptr;
  if (key == "id") return t.id;
  if (key == "created_at") return absl::ToUnixMicros(t.created_at);
  if (key == "finished_at") {
    if (!t.finished_at) return std::nullopt;
    return absl::ToUnixMicros(*t.finished_at);
  }
  if (key == "rung") return t.rung;
  if (key == "attempts") return t.attempts;
  if (key == "tokens_per_s")
    return m ? std::optional(m->tokens_per_s) : std::nullopt;
  if (key == "tokens_per_joule") return m ? m->tokens_per_joule : std::nullopt;
  if (key == "step_time_s") {
    return m ? std::optional(m->step_time_s.median) : std::nullopt;
  }
  if (key == "mfu") return m ? std::optional(m->mfu) : std::nullopt;
  if (key == "watts_per_gpu") return m ? m->watts_per_gpu : std::nullopt;
  if (key == "predicted_tokens_per_s") {
    return t.predicted ? std::optional(t.predicted->tokens_per_s)
                       : std::nullopt;
  }
  ADD_FAILURE() << "no brute-force key " << key;
  return std::nullopt;
}

bool InRange(std::optional<absl::Time> t, const TimeRange& r) {
  if (!r.begin && !r.end) return true;
  if (!t) return false;
  return (!r.begin || *t >= *r.begin) && (!r.end || *t < *r.end);
}

template <typename T>
bool Matches(const std::optional<T>& want, const T& have) {
  return !want || *want == have;
}

// The brute-force ListTrials.
std::vector<int64_t> BruteForce(const std::vector<Trial>& trials,
                                const std::map<int64_t, Study>& studies,
                                const TrialFilter& f) {
  std::vector<const Trial*> kept;
  for (const Trial& t : trials) {
    const Study& s = studies.at(t.study_id);
    const Layout& l = t.layout;
    const LayoutFilter& lf = f.layout;
    if (!Matches(f.study_id, t.study_id)) continue;
    if (!f.statuses.empty() && std::find(f.statuses.begin(), f.statuses.end(),
                                         t.status) == f.statuses.end()) {
      continue;
    }
    if (!f.model.empty() && s.model != f.model) continue;
    if (!f.gpu.empty() && s.gpu != f.gpu) continue;
    if (!Matches(f.nodes, s.nodes) ||
        !Matches(f.gpus_per_node, s.gpus_per_node))
      continue;
    if (!Matches(lf.tp, l.tp) || !Matches(lf.sp, l.sp) ||
        !Matches(lf.pp, l.pp) || !Matches(lf.vpp, l.vpp) ||
        !Matches(lf.cp, l.cp) || !Matches(lf.dp, l.dp) ||
        !Matches(lf.zero, l.zero) || !Matches(lf.shard_group, l.shard_group) ||
        !Matches(lf.micro_batch, l.micro_batch) ||
        !Matches(lf.grad_accum, l.grad_accum) ||
        !Matches(lf.recompute, l.recompute)) {
      continue;
    }
    if (!Matches(f.rung, t.rung)) continue;
    if (!f.leased_to.empty() &&
        std::find(t.lease_agent_ids.begin(), t.lease_agent_ids.end(),
                  f.leased_to) == t.lease_agent_ids.end()) {
      continue;
    }
    if (!InRange(t.created_at, f.created)) continue;
    if (!InRange(t.finished_at, f.finished)) continue;
    kept.push_back(&t);
  }
  std::sort(kept.begin(), kept.end(), [&](const Trial* a, const Trial* b) {
    const auto va = SortValue(*a, studies.at(a->study_id), f.sort_by);
    const auto vb = SortValue(*b, studies.at(b->study_id), f.sort_by);
    if (va.has_value() != vb.has_value()) return va.has_value();  // nulls last
    if (va && *va != *vb) return f.descending ? *va > *vb : *va < *vb;
    return f.descending ? a->id > b->id : a->id < b->id;
  });
  std::vector<int64_t> ids;
  for (size_t i = 0; i < kept.size(); ++i) {
    if (static_cast<int64_t>(i) < f.offset) continue;
    if (f.limit > 0 && static_cast<int64_t>(ids.size()) >= f.limit) break;
    ids.push_back(kept[i]->id);
  }
  return ids;
}

std::vector<int64_t> IdsOf(const std::vector<Trial>& trials) {
  std::vector<int64_t> ids;
  for (const Trial& t : trials) ids.push_back(t.id);
  return ids;
}

class HistoryQueryTest : public StoreTest {
 protected:
  // Three studies, 40 trials each with random layouts, some leased, some
  // reported (at random times, with random metrics), some cancelled.
  void SetUp() override {
    StoreTest::SetUp();
    Register("a");
    Register("b");
    const int64_t s1 = MakeStudy(SampleStudy("one", "llama2-7b", "H100-SXM"));
    NewStudy big = SampleStudy("two", "llama2-13b", "H100-SXM");
    big.nodes = 4;
    const int64_t s2 = MakeStudy(big);
    const int64_t s3 = MakeStudy(SampleStudy("three", "llama2-7b", "A100"));
    std::mt19937 rng(42);
    auto pick = [&](std::vector<int64_t> v) {
      return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
    };
    for (int64_t study : {s1, s2, s3}) {
      for (int i = 0; i < 40; ++i) {
        NewTrial t = SampleTrial(pick({1, 2, 4, 8}), pick({1, 2}));
        t.layout.sp = t.layout.tp > 1 && pick({0, 1}) == 1;
        t.layout.zero = pick({0, 1, 2, 3});
        t.layout.micro_batch = pick({1, 2});
        t.layout.recompute = static_cast<Recompute>(pick({0, 1, 2}));
        t.rung = pick({0, 1, 2});
        if (pick({0, 1, 2, 3}) == 0) t.predicted.reset();
        clock_.Advance(absl::Seconds(pick({1, 5, 60})));
        const int64_t id = MakeTrials(study, {t})[0];
        const int64_t fate = pick({0, 1, 2, 3, 4});
        if (fate == 0) continue;  // stays queued
        const std::string agent = pick({0, 1}) == 0 ? "a" : "b";
        ASSERT_TRUE(
            store_->LeaseTrial(id, {agent}, clock_.Now() + absl::Hours(1))
                .ok());
        if (fate == 1) continue;  // stays leased
        TrialResult r = SampleResult(
            fate == 4 ? TrialStatus::kOom : TrialStatus::kOk,
            0.5 + 0.1 * static_cast<double>(pick({0, 1, 2, 3, 4, 5, 6, 7})), 3);
        if (pick({0, 1}) == 0) r.tokens_per_joule.reset();
        ASSERT_TRUE(
            store_
                ->ReportTrial(id, agent, r,
                              clock_.Now() + absl::Seconds(pick({1, 30})))
                .ok());
      }
    }
    ASSERT_TRUE(store_->CancelQueuedTrials(s3).ok());
    auto all = store_->ListTrials({});
    ASSERT_TRUE(all.ok());
    trials_ = std::move(*all);
    ASSERT_EQ(trials_.size(), 120u);
    for (int64_t id : {s1, s2, s3}) studies_[id] = *store_->GetStudy(id);
  }

  std::vector<Trial> trials_;
  std::map<int64_t, Study> studies_;
};

TEST_F(HistoryQueryTest, EveryFilterAndSortAgreesWithBruteForce) {
  std::mt19937 rng(7);
  auto coin = [&](int in) {
    return std::uniform_int_distribution<int>(0, in - 1)(rng) == 0;
  };
  auto any_of = [&](const std::vector<int64_t>& v) {
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  const absl::Time first = trials_.front().created_at;
  const absl::Time last = trials_.back().created_at;
  auto some_time = [&] {
    return first +
           (last - first) * std::uniform_real_distribution<double>(0, 1)(rng);
  };
  const std::vector<std::string> keys = {
      "id",       "created_at",       "finished_at",           "tokens_per_s",
      "mfu",      "tokens_per_joule", "step_time_s",           "rung",
      "attempts", "watts_per_gpu",    "predicted_tokens_per_s"};
  int nonempty = 0;
  for (int round = 0; round < 300; ++round) {
    TrialFilter f;
    if (coin(4)) f.study_id = studies_.begin()->first + any_of({0, 1, 2});
    if (coin(3)) {
      for (TrialState s : AllTrialStates()) {
        if (coin(3)) f.statuses.push_back(s);
      }
    }
    if (coin(4)) f.model = any_of({0, 1}) == 0 ? "llama2-7b" : "llama2-13b";
    if (coin(4)) f.gpu = any_of({0, 1}) == 0 ? "H100-SXM" : "A100";
    if (coin(6)) f.nodes = any_of({2, 4});
    if (coin(8)) f.gpus_per_node = any_of({8, 4});
    if (coin(3)) f.layout.tp = any_of({1, 2, 4, 8});
    if (coin(5)) f.layout.sp = coin(2);
    if (coin(4)) f.layout.pp = any_of({1, 2});
    if (coin(6)) f.layout.dp = any_of({1, 2, 4, 8, 16});
    if (coin(4)) f.layout.zero = any_of({0, 1, 2, 3});
    if (coin(5)) f.layout.micro_batch = any_of({1, 2});
    if (coin(5)) f.layout.recompute = static_cast<Recompute>(any_of({0, 1, 2}));
    if (coin(8)) f.layout.vpp = 1;
    if (coin(8)) f.layout.grad_accum = any_of({4, 8});
    if (coin(8)) f.layout.cp = 1;
    if (coin(8)) f.layout.shard_group = 0;
    if (coin(5)) f.rung = any_of({0, 1, 2});
    if (coin(6)) f.leased_to = coin(2) ? "a" : "b";
    if (coin(4)) f.created.begin = some_time();
    if (coin(4)) f.created.end = some_time();
    if (coin(5)) f.finished.begin = some_time();
    if (coin(5)) f.finished.end = some_time() + absl::Minutes(1);
    f.sort_by =
        keys[std::uniform_int_distribution<size_t>(0, keys.size() - 1)(rng)];
    f.descending = coin(2);
    if (coin(3)) f.limit = any_of({1, 3, 10});
    if (coin(4)) f.offset = any_of({0, 2, 5});

    const std::vector<int64_t> want = BruteForce(trials_, studies_, f);
    absl::StatusOr<std::vector<Trial>> got = store_->ListTrials(f);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(IdsOf(*got), want) << "round " << round << ", sort " << f.sort_by;
    nonempty += want.empty() ? 0 : 1;
  }
  EXPECT_GT(nonempty, 100);  // the filters were not all trivially empty
}

TEST_F(HistoryQueryTest, HowDidEightWayTpDoOnH100) {
  TrialFilter f;
  f.gpu = "H100-SXM";
  f.layout.tp = 8;
  f.statuses = {TrialState::kOk};
  f.sort_by = "tokens_per_s";
  f.descending = true;
  auto got = store_->ListTrials(f);
  ASSERT_TRUE(got.ok());
  ASSERT_FALSE(got->empty());
  for (size_t i = 0; i < got->size(); ++i) {
    const Trial& t = (*got)[i];
    EXPECT_EQ(t.layout.tp, 8);
    EXPECT_EQ(t.status, TrialState::kOk);
    EXPECT_EQ(studies_.at(t.study_id).gpu, "H100-SXM");
    if (i > 0) {
      EXPECT_GE((*got)[i - 1].measured->tokens_per_s, t.measured->tokens_per_s);
    }
  }
}

TEST_F(HistoryQueryTest, BadFiltersAreInvalidArgument) {
  TrialFilter f;
  f.sort_by = "loss";
  auto got = store_->ListTrials(f);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(got.status().message(), "filter.sort_by"));
  EXPECT_TRUE(absl::StrContains(got.status().message(), "tokens_per_s"));
  f = {};
  f.limit = -1;
  EXPECT_EQ(store_->ListTrials(f).status().code(),
            absl::StatusCode::kInvalidArgument);
  f = {};
  f.leased_to = "bad id!";
  EXPECT_EQ(store_->ListTrials(f).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Each history query is served by an index: no full scan of trials or
// studies.
TEST_F(HistoryQueryTest, HistoryQueriesUseIndexes) {
  const absl::Time now = clock_.Now();
  struct Case {
    const char* what;
    TrialFilter filter;
    const char* index;
  };
  auto filter = [](auto set) { return With<TrialFilter>(set); };
  const std::vector<Case> cases = {
      {"by study", filter([](auto& f) { f.study_id = 1; }), "trials_by_study_in_lease_order"},
      {"by study, best first", filter([](auto& f) {
         f.study_id = 1;
         f.sort_by = "tokens_per_s";
         f.descending = true;
       }),
       "trials_by_study_in_lease_order"},
      {"by gpu", filter([](auto& f) { f.gpu = "H100-SXM"; }), "studies_by_gpu"},
      {"by model and gpu", filter([](auto& f) {
         f.model = "llama2-7b";
         f.gpu = "A100";
       }),
       "studies_by_model"},
      {"by tp", filter([](auto& f) { f.layout.tp = 8; }), "trials_by_layout"},
      {"by status", filter([](auto& f) { f.statuses = {TrialState::kLeased}; }),
       "trials_by_lease"},
      {"leased to", filter([](auto& f) { f.leased_to = "a"; }),
       "trial_leases_by_agent"},
      {"created last hour",
       filter([&](auto& f) { f.created.begin = now - absl::Hours(1); }),
       "trials_by_created"},
      {"finished in a range", filter([&](auto& f) {
         f.finished.begin = now - absl::Hours(2);
         f.finished.end = now;
       }),
       "trials_by_finished"},
  };
  for (const Case& c : cases) {
    auto plan = store_->ExplainListTrials(c.filter);
    ASSERT_TRUE(plan.ok()) << plan.status();
    const std::string text = absl::StrJoin(*plan, "\n");
    EXPECT_TRUE(absl::StrContains(text, c.index)) << c.what << ":\n" << text;
    for (const std::string& line : *plan) {
      EXPECT_FALSE(line == "SCAN t" || absl::StartsWith(line, "SCAN t ") ||
                   line == "SCAN s" || absl::StartsWith(line, "SCAN s "))
          << c.what << ":\n"
          << text;
    }
  }
}

}  // namespace
}  // namespace tessera::db
