// Trials in the SQLite store: adding (all or none), reading back, counting.
#include "absl/strings/match.h"
#include "db/sqlite_trial_store.h"
#include "gtest/gtest.h"
#include "tests/db/test_util.h"

namespace tessera::db {
namespace {

using ::tessera::db::testing::CountRows;
using ::tessera::db::testing::SampleStudy;
using ::tessera::db::testing::SampleTrial;
using TrialStoreTest = ::tessera::db::testing::StoreTest;

TEST_F(TrialStoreTest, AddedTrialsReadBackQueued) {
  const int64_t study = MakeStudy();
  NewTrial a = SampleTrial(2, 1);
  a.layout.sp = true;
  a.layout.recompute = Recompute::kSelective;
  a.layout.shard_group = 4;
  a.rung = 1;
  NewTrial b = SampleTrial(4, 2, /*gang_size=*/2);
  b.layout.vpp = 2;
  b.layout.cp = 1;
  b.layout.zero = 3;
  b.predicted.reset();
  const std::vector<int64_t> ids = MakeTrials(study, {a, b});
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_LT(ids[0], ids[1]);

  const Trial ta = GetTrialOrDie(ids[0]);
  EXPECT_EQ(ta.id, ids[0]);
  EXPECT_EQ(ta.study_id, study);
  EXPECT_EQ(ta.model, "llama2-7b");
  EXPECT_EQ(ta.gpu, "H100-SXM");
  EXPECT_EQ(ta.layout, a.layout);
  EXPECT_EQ(ta.rung, 1);
  EXPECT_EQ(ta.steps, 20);
  EXPECT_EQ(ta.warmup_steps, 5);
  EXPECT_EQ(ta.gang_size, 1);
  EXPECT_EQ(ta.status, TrialState::kQueued);
  ASSERT_TRUE(ta.predicted.has_value());
  EXPECT_EQ(ta.predicted->tokens_per_s, 2000);
  EXPECT_EQ(ta.predicted->tokens_per_joule, 2.5);
  EXPECT_EQ(ta.predicted->step_time_s, 0.5);
  EXPECT_EQ(ta.predicted->peak_memory_bytes, 40'000'000'000);
  EXPECT_TRUE(ta.lease_agent_ids.empty());
  EXPECT_FALSE(ta.lease_expires_at.has_value());
  EXPECT_EQ(ta.attempts, 0);
  EXPECT_EQ(ta.reported_by, "");
  EXPECT_FALSE(ta.measured.has_value());
  EXPECT_EQ(ta.result_json, "");
  EXPECT_EQ(ta.created_at, clock_.Now());
  EXPECT_FALSE(ta.started_at.has_value());
  EXPECT_FALSE(ta.finished_at.has_value());

  const Trial tb = GetTrialOrDie(ids[1]);
  EXPECT_EQ(tb.layout, b.layout);
  EXPECT_EQ(tb.gang_size, 2);
  EXPECT_FALSE(tb.predicted.has_value());
}

TEST_F(TrialStoreTest, AddTrialsIsAllOrNothing) {
  const int64_t study = MakeStudy();
  MakeTrials(study, {SampleTrial()});
  NewTrial bad = SampleTrial();
  bad.steps = 0;
  ExpectErrorWritesNothing(
      [&] {
        return store_->AddTrials(study, {SampleTrial(), bad}).status();
      },
      absl::StatusCode::kInvalidArgument, "trials[1].steps");
  const std::pair<std::function<void(NewTrial&)>, const char*> cases[] = {
      {[](NewTrial& t) { t.layout.dp = 0; }, "trials[0].layout.dp"},
      {[](NewTrial& t) { t.layout.tp = 0; }, "trials[0].layout.tp"},
      {[](NewTrial& t) { t.layout.zero = 4; }, "trials[0].layout.zero"},
      {[](NewTrial& t) { t.layout.grad_accum = 0; },
       "trials[0].layout.grad_accum"},
      {[](NewTrial& t) { t.warmup_steps = -1; }, "trials[0].warmup_steps"},
      {[](NewTrial& t) { t.gang_size = 0; }, "trials[0].gang_size"},
      {[](NewTrial& t) { t.rung = -1; }, "trials[0].rung"},
      {[](NewTrial& t) { t.predicted->tokens_per_s = -1; },
       "trials[0].predicted.tokens_per_s"},
  };
  for (const auto& [mutate, field] : cases) {
    NewTrial t = SampleTrial();
    mutate(t);
    ExpectErrorWritesNothing(
        [&] { return store_->AddTrials(study, {t}).status(); },
        absl::StatusCode::kInvalidArgument, field);
  }
  ExpectErrorWritesNothing(
      [&] { return store_->AddTrials(9999, {SampleTrial()}).status(); },
      absl::StatusCode::kNotFound, "study 9999");
  ASSERT_TRUE(store_->SetStudyStatus(study, StudyStatus::kDone, "").ok());
  ExpectErrorWritesNothing(
      [&] { return store_->AddTrials(study, {SampleTrial()}).status(); },
      absl::StatusCode::kFailedPrecondition, "done");
  EXPECT_EQ(CountRows(path_, "trials"), 1);
}

TEST_F(TrialStoreTest, GetUnknownTrialIsNotFound) {
  EXPECT_EQ(store_->GetTrial(5).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->GetTrialMetrics(5).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->CountTrialsByStatus(5).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(TrialStoreTest, CountsByStatusIncludeEveryState) {
  const int64_t study = MakeStudy();
  const int64_t other = MakeStudy();
  const std::vector<int64_t> ids =
      MakeTrials(study, {SampleTrial(), SampleTrial(), SampleTrial()});
  MakeTrials(other, {SampleTrial()});
  Register("a");
  ASSERT_TRUE(
      store_->LeaseTrial(ids[0], {"a"}, clock_.Now() + absl::Minutes(1)).ok());
  auto counts = store_->CountTrialsByStatus(study);
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->size(), AllTrialStates().size());
  EXPECT_EQ(counts->at(TrialState::kQueued), 2);
  EXPECT_EQ(counts->at(TrialState::kLeased), 1);
  EXPECT_EQ(counts->at(TrialState::kOk), 0);
  auto empty_study = store_->CountTrialsByStatus(MakeStudy());
  ASSERT_TRUE(empty_study.ok());
  for (const auto& [state, n] : *empty_study) EXPECT_EQ(n, 0);
}

TEST_F(TrialStoreTest, MetricsAreEmptyBeforeAReport) {
  const int64_t study = MakeStudy();
  const std::vector<int64_t> ids = MakeTrials(study, {SampleTrial()});
  auto metrics = store_->GetTrialMetrics(ids[0]);
  ASSERT_TRUE(metrics.ok());
  EXPECT_TRUE(metrics->empty());
}

TEST(TrialStateTest, NamesRoundTrip) {
  for (TrialState s : AllTrialStates()) {
    EXPECT_EQ(*ParseTrialState(TrialStateName(s)), s);
  }
  EXPECT_EQ(ParseTrialState("running").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StateOfResult(TrialStatus::kOom), TrialState::kOom);
  EXPECT_EQ(StateOfResult(TrialStatus::kInvalid), TrialState::kInvalid);
  EXPECT_FALSE(IsFinal(TrialState::kLeased));
  EXPECT_TRUE(IsFinal(TrialState::kCancelled));
  for (StudyStatus s :
       {StudyStatus::kQueued, StudyStatus::kRunning, StudyStatus::kDone,
        StudyStatus::kCancelled, StudyStatus::kFailed}) {
    EXPECT_EQ(*ParseStudyStatus(StudyStatusName(s)), s);
  }
  EXPECT_EQ(StudyScope(12), "study:12");
  EXPECT_EQ(GpuScope("H100-SXM"), "gpu:H100-SXM");
}

}  // namespace
}  // namespace tessera::db
