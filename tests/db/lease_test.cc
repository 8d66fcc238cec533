// Leasing trials, reporting them exactly once, gangs, and lost leases.
#include <cmath>
#include <limits>

#include "absl/strings/match.h"
#include "db/sqlite_trial_store.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/db/test_util.h"

namespace tessera::db {
namespace {

using ::tessera::db::testing::CountRows;
using ::tessera::db::testing::SampleResult;
using ::tessera::db::testing::SampleTrial;
using ::tessera::db::testing::StoreTest;

class LeaseTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    study_ = MakeStudy();
    for (const char* id : {"a", "b", "c"}) Register(id);
  }
  absl::Time In(absl::Duration d) { return clock_.Now() + d; }

  int64_t study_ = 0;
};

// The generation grows after each commit that makes a trial queued, by any
// path, and only then: a planner that read the queue empty at generation G
// reads it again once it changes (service/leases.cc).
TEST_F(LeaseTest, QueuedTrialsGenerationGrowsWhenATrialBecomesQueued) {
  uint64_t g = store_->QueuedTrialsGeneration();
  const std::vector<int64_t> ids =
      MakeTrials(study_, {SampleTrial(), SampleTrial()});
  EXPECT_GT(store_->QueuedTrialsGeneration(), g) << "trials added";
  g = store_->QueuedTrialsGeneration();
  ASSERT_TRUE(store_->LeaseTrial(ids[0], {"a"}, In(absl::Seconds(10))).ok());
  ASSERT_TRUE(store_->LeaseTrial(ids[1], {"b"}, In(absl::Minutes(5))).ok());
  EXPECT_EQ(store_->QueuedTrialsGeneration(), g) << "leased: none queued";
  ASSERT_TRUE(store_->ReleaseLease(ids[1], "b", "draining").ok());
  EXPECT_GT(store_->QueuedTrialsGeneration(), g) << "handed back";
  g = store_->QueuedTrialsGeneration();
  ASSERT_TRUE(store_->LeaseTrial(ids[1], {"c"}, In(absl::Minutes(5))).ok());
  ASSERT_TRUE(store_
                  ->ReportTrial(ids[1], "c",
                                SampleResult(TrialStatus::kOk, 2.0, 3),
                                clock_.Now())
                  .ok());
  EXPECT_EQ(store_->QueuedTrialsGeneration(), g) << "reported: none queued";
  clock_.Advance(absl::Seconds(11));
  absl::StatusOr<RequeueResult> lost =
      store_->RequeueExpiredLeases(clock_.Now());
  ASSERT_TRUE(lost.ok()) << lost.status();
  EXPECT_GT(store_->QueuedTrialsGeneration(), g) << "lease expired";
  g = store_->QueuedTrialsGeneration();
  // A write that fails queues nothing that stays: growing then is allowed
  // (one more look), never required; a read changes nothing.
  EXPECT_TRUE(store_->ListQueuedTrials({study_}, 10, {}).ok());
  EXPECT_EQ(store_->QueuedTrialsGeneration(), g);
}

TEST_F(LeaseTest, LeaseReportThenReReportIsAlreadyExists) {
  const int64_t id = MakeTrials(study_, {SampleTrial()})[0];
  const absl::Time leased_at = clock_.Now();
  ASSERT_TRUE(store_->LeaseTrial(id, {"a"}, In(absl::Minutes(5))).ok());
  Trial t = GetTrialOrDie(id);
  EXPECT_EQ(t.status, TrialState::kLeased);
  EXPECT_EQ(t.lease_agent_ids, std::vector<std::string>{"a"});
  EXPECT_EQ(t.lease_expires_at, leased_at + absl::Minutes(5));
  EXPECT_EQ(t.started_at, leased_at);

  clock_.Advance(absl::Minutes(2));
  const TrialResult result = SampleResult(TrialStatus::kOk, 2.0, 12);
  ASSERT_TRUE(store_->ReportTrial(id, "a", result, clock_.Now()).ok());

  t = GetTrialOrDie(id);
  EXPECT_EQ(t.status, TrialState::kOk);
  EXPECT_EQ(t.reason, "");
  EXPECT_EQ(t.reported_by, "a");
  EXPECT_TRUE(t.lease_agent_ids.empty());
  EXPECT_FALSE(t.lease_expires_at.has_value());
  EXPECT_EQ(t.finished_at, clock_.Now());
  EXPECT_EQ(t.started_at, leased_at);
  ASSERT_TRUE(t.measured.has_value());
  const TrialMeasurement& m = *t.measured;
  EXPECT_EQ(m.backend, "cpu");
  EXPECT_EQ(m.device, "cpu (4 threads)");
  EXPECT_EQ(m.ranks, 16);
  EXPECT_EQ(m.steps, 10);
  EXPECT_DOUBLE_EQ(m.step_time_s.median, 1.0);
  EXPECT_DOUBLE_EQ(m.step_time_s.p10, 0.8);
  EXPECT_DOUBLE_EQ(m.step_time_s.p90, 1.4);
  EXPECT_DOUBLE_EQ(m.tokens_per_s, 4096);
  EXPECT_DOUBLE_EQ(m.tokens_per_s_per_gpu, 256);
  EXPECT_DOUBLE_EQ(m.tflops_per_gpu, 0.02);
  EXPECT_DOUBLE_EQ(m.mfu, 0.4);
  EXPECT_EQ(m.peak_memory_bytes, 300);  // the largest rank
  EXPECT_DOUBLE_EQ(m.compute_s, 0.6);
  EXPECT_DOUBLE_EQ(m.comm_s, 0.4);
  EXPECT_DOUBLE_EQ(m.exposed_comm_s, 0.2);
  EXPECT_DOUBLE_EQ(*m.watts_per_gpu, 1300);
  EXPECT_DOUBLE_EQ(*m.tokens_per_joule, 0.75);
  // The whole result, as the agent sent it.
  EXPECT_EQ(nlohmann::json::parse(t.result_json), TrialResultToJson(result));
  absl::StatusOr<std::vector<TrialMetric>> metrics =
      store_->GetTrialMetrics(id);
  ASSERT_TRUE(metrics.ok());
  ASSERT_EQ(metrics->size(), 12u);
  for (size_t i = 0; i < metrics->size(); ++i) {
    EXPECT_EQ((*metrics)[i].trial_id, id);
    EXPECT_EQ((*metrics)[i].step, static_cast<int64_t>(i));
    EXPECT_DOUBLE_EQ((*metrics)[i].loss, result.loss[i]);
    EXPECT_DOUBLE_EQ((*metrics)[i].step_time_s, result.step_times_s[i]);
  }

  // A retry of the same report (the planner crashed before answering) and
  // any other report: nothing written, nothing counted twice.
  ExpectErrorWritesNothing(
      [&] { return store_->ReportTrial(id, "a", result, clock_.Now()); },
      absl::StatusCode::kAlreadyExists, "already reported by a");
  ExpectErrorWritesNothing(
      [&] {
        return store_->ReportTrial(id, "b", SampleResult(TrialStatus::kOom),
                                   clock_.Now());
      },
      absl::StatusCode::kAlreadyExists, "trial");
  EXPECT_EQ(CountRows(path_, "trial_metrics"), 12);
}

TEST_F(LeaseTest, ReportErrorsWriteNothing) {
  const std::vector<int64_t> ids =
      MakeTrials(study_, {SampleTrial(), SampleTrial()});
  ASSERT_TRUE(store_->LeaseTrial(ids[0], {"a"}, In(absl::Minutes(5))).ok());
  const TrialResult r = SampleResult();
  ExpectErrorWritesNothing(
      [&] { return store_->ReportTrial(ids[0], "b", r, clock_.Now()); },
      absl::StatusCode::kFailedPrecondition,
      "agent b does not hold its lease (leased, held by a)");
  ExpectErrorWritesNothing(
      [&] { return store_->ReportTrial(ids[1], "a", r, clock_.Now()); },
      absl::StatusCode::kFailedPrecondition, "queued");
  ExpectErrorWritesNothing(
      [&] { return store_->ReportTrial(12345, "a", r, clock_.Now()); },
      absl::StatusCode::kNotFound, "trial 12345");
  ExpectErrorWritesNothing(
      [&] { return store_->ReportTrial(ids[0], "no such", r, clock_.Now()); },
      absl::StatusCode::kInvalidArgument, "report.agent_id");
}

TEST_F(LeaseTest, FailedResultsSetTheirStateAndNonFiniteLossIsNull) {
  const std::vector<int64_t> ids =
      MakeTrials(study_, {SampleTrial(), SampleTrial()});
  ASSERT_TRUE(store_->LeaseTrial(ids[0], {"a"}, In(absl::Minutes(5))).ok());
  ASSERT_TRUE(store_->LeaseTrial(ids[1], {"b"}, In(absl::Minutes(5))).ok());
  TrialResult oom = SampleResult(TrialStatus::kOom);
  oom.reason = "CUDA out of memory: tried to allocate 2 GiB; \xff\xfe tail";
  ASSERT_TRUE(store_->ReportTrial(ids[0], "a", oom, clock_.Now()).ok());
  Trial t = GetTrialOrDie(ids[0]);
  EXPECT_EQ(t.status, TrialState::kOom);
  EXPECT_EQ(t.reason, oom.reason);  // the column keeps the bytes
  EXPECT_TRUE(nlohmann::json::accept(t.result_json));  // the JSON stays valid

  TrialResult nan = SampleResult(TrialStatus::kNan, 1.0, 4);
  nan.loss = {5.0, std::nan(""), std::numeric_limits<double>::infinity()};
  nan.watts_per_gpu.reset();
  nan.tokens_per_joule.reset();
  ASSERT_TRUE(store_->ReportTrial(ids[1], "b", nan, clock_.Now()).ok());
  t = GetTrialOrDie(ids[1]);
  EXPECT_EQ(t.status, TrialState::kNan);
  EXPECT_FALSE(t.measured->watts_per_gpu.has_value());
  EXPECT_FALSE(t.measured->tokens_per_joule.has_value());
  auto metrics = store_->GetTrialMetrics(ids[1]);
  ASSERT_TRUE(metrics.ok());
  ASSERT_EQ(metrics->size(), 4u);  // the longer of the two series
  EXPECT_EQ((*metrics)[0].loss, 5.0);
  EXPECT_TRUE(std::isnan((*metrics)[1].loss));
  EXPECT_TRUE(std::isnan((*metrics)[2].loss));
  EXPECT_TRUE(std::isnan((*metrics)[3].loss));  // not recorded
  EXPECT_DOUBLE_EQ((*metrics)[3].step_time_s, nan.step_times_s[3]);
}

TEST_F(LeaseTest, LeaseErrorsWriteNothing) {
  const std::vector<int64_t> ids =
      MakeTrials(study_, {SampleTrial(), SampleTrial(2, 1, /*gang_size=*/2)});
  const absl::Time expiry = In(absl::Minutes(5));
  ExpectErrorWritesNothing(
      [&] { return store_->LeaseTrial(ids[0], {}, expiry); },
      absl::StatusCode::kInvalidArgument, "lease.agent_ids");
  ExpectErrorWritesNothing(
      [&] {
        return store_->LeaseTrial(ids[1], {"a", "a"}, expiry);
      },
      absl::StatusCode::kInvalidArgument, "lease.agent_ids[1]");
  ExpectErrorWritesNothing(
      [&] { return store_->LeaseTrial(ids[1], {"a"}, expiry); },
      absl::StatusCode::kInvalidArgument, "needs a gang of 2 agents, got 1");
  ExpectErrorWritesNothing(
      [&] {
        return store_->LeaseTrial(ids[1], {"a", "ghost"}, expiry);
      },
      absl::StatusCode::kNotFound, "agent ghost");
  ExpectErrorWritesNothing(
      [&] { return store_->LeaseTrial(777, {"a"}, expiry); },
      absl::StatusCode::kNotFound, "trial 777");
  ASSERT_TRUE(store_->MarkAgentGone("c").ok());
  ExpectErrorWritesNothing(
      [&] {
        return store_->LeaseTrial(ids[1], {"a", "c"}, expiry);
      },
      absl::StatusCode::kFailedPrecondition, "agent c: is gone");
  ASSERT_TRUE(store_->LeaseTrial(ids[0], {"a"}, expiry).ok());
  ExpectErrorWritesNothing(
      [&] { return store_->LeaseTrial(ids[0], {"b"}, expiry); },
      absl::StatusCode::kFailedPrecondition, "is leased, not queued");
  ASSERT_TRUE(store_->SetStudyStatus(study_, StudyStatus::kCancelled, "").ok());
  ExpectErrorWritesNothing(
      [&] {
        return store_->LeaseTrial(ids[1], {"a", "b"}, expiry);
      },
      absl::StatusCode::kFailedPrecondition, "is cancelled");
}

TEST_F(LeaseTest, GangIsLeasedWholeAndItsFirstReportWins) {
  const std::vector<int64_t> ids = MakeTrials(
      study_, {SampleTrial(4, 2, /*gang_size=*/3), SampleTrial(4, 2, 3)});
  ASSERT_TRUE(
      store_->LeaseTrial(ids[0], {"c", "a", "b"}, In(absl::Minutes(5))).ok());
  Trial t = GetTrialOrDie(ids[0]);
  EXPECT_EQ(t.lease_agent_ids, (std::vector<std::string>{"c", "a", "b"}));
  auto leased_to_a =
      store_->ListTrials(::tessera::db::testing::With<TrialFilter>(
          [](auto& f) { f.leased_to = "a"; }));
  ASSERT_TRUE(leased_to_a.ok());
  ASSERT_EQ(leased_to_a->size(), 1u);
  EXPECT_EQ(leased_to_a->front().lease_agent_ids, t.lease_agent_ids);

  ASSERT_TRUE(store_->ExtendLease(ids[0], "b", In(absl::Minutes(9))).ok());
  EXPECT_EQ(GetTrialOrDie(ids[0]).lease_expires_at, In(absl::Minutes(9)));
  ASSERT_TRUE(
      store_->ReportTrial(ids[0], "a", SampleResult(), clock_.Now()).ok());
  EXPECT_EQ(GetTrialOrDie(ids[0]).reported_by, "a");
  for (const char* other : {"b", "c"}) {
    ExpectErrorWritesNothing(
        [&] {
          return store_->ReportTrial(ids[0], other, SampleResult(),
                                     clock_.Now());
        },
        absl::StatusCode::kAlreadyExists, "already reported by a");
  }
  // One member of a gang stops: the whole gang's lease ends.
  ASSERT_TRUE(
      store_->LeaseTrial(ids[1], {"a", "b", "c"}, In(absl::Minutes(5))).ok());
  auto requeued = store_->RequeueTrialsOf("b");
  ASSERT_TRUE(requeued.ok());
  EXPECT_EQ(requeued->requeued, std::vector<int64_t>{ids[1]});
  t = GetTrialOrDie(ids[1]);
  EXPECT_EQ(t.status, TrialState::kQueued);
  EXPECT_TRUE(t.lease_agent_ids.empty());
  EXPECT_EQ(CountRows(path_, "trial_leases"), 0);
}

TEST_F(LeaseTest, ExtendLeaseOnlyByAHolder) {
  const std::vector<int64_t> ids =
      MakeTrials(study_, {SampleTrial(), SampleTrial()});
  ASSERT_TRUE(store_->LeaseTrial(ids[0], {"a"}, In(absl::Minutes(1))).ok());
  ASSERT_TRUE(store_->ExtendLease(ids[0], "a", In(absl::Minutes(10))).ok());
  ExpectErrorWritesNothing(
      [&] { return store_->ExtendLease(ids[0], "b", In(absl::Hours(1))); },
      absl::StatusCode::kFailedPrecondition, "agent b does not hold");
  ExpectErrorWritesNothing(
      [&] { return store_->ExtendLease(ids[1], "a", In(absl::Hours(1))); },
      absl::StatusCode::kFailedPrecondition, "queued");
  ExpectErrorWritesNothing(
      [&] { return store_->ExtendLease(99, "a", In(absl::Hours(1))); },
      absl::StatusCode::kNotFound, "trial 99");
  // The old expiry has passed; the extended lease has not.
  clock_.Advance(absl::Minutes(5));
  auto expired = store_->RequeueExpiredLeases(clock_.Now());
  ASSERT_TRUE(expired.ok());
  EXPECT_TRUE(expired->requeued.empty());
  EXPECT_EQ(GetTrialOrDie(ids[0]).status, TrialState::kLeased);
}

TEST_F(LeaseTest, ExtendLeasesOfAnAgentMovesEveryLeaseItHolds) {
  const std::vector<int64_t> ids = MakeTrials(
      study_,
      {SampleTrial(), SampleTrial(2, 1, /*gang_size=*/2), SampleTrial()});
  ASSERT_TRUE(store_->LeaseTrial(ids[0], {"a"}, In(absl::Minutes(1))).ok());
  ASSERT_TRUE(
      store_->LeaseTrial(ids[1], {"b", "a"}, In(absl::Minutes(1))).ok());
  ASSERT_TRUE(store_->LeaseTrial(ids[2], {"c"}, In(absl::Minutes(1))).ok());
  auto held = store_->ExtendLeasesOf("a", In(absl::Minutes(10)));
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_EQ(*held, (std::vector<int64_t>{ids[0], ids[1]}));
  EXPECT_EQ(GetTrialOrDie(ids[0]).lease_expires_at, In(absl::Minutes(10)));
  EXPECT_EQ(GetTrialOrDie(ids[1]).lease_expires_at, In(absl::Minutes(10)));
  EXPECT_EQ(GetTrialOrDie(ids[2]).lease_expires_at, In(absl::Minutes(1)));
  clock_.Advance(absl::Minutes(2));
  auto expired = store_->RequeueExpiredLeases(clock_.Now());
  ASSERT_TRUE(expired.ok());
  EXPECT_EQ(expired->requeued, std::vector<int64_t>{ids[2]});
  auto none = store_->ExtendLeasesOf("c", In(absl::Minutes(10)));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  ExpectErrorWritesNothing(
      [&] {
        return store_->ExtendLeasesOf("ghost", In(absl::Hours(1))).status();
      },
      absl::StatusCode::kNotFound, "agent ghost");
}

TEST_F(LeaseTest, ReleasedLeaseIsQueuedAgainWithoutAnAttempt) {
  const std::vector<int64_t> ids =
      MakeTrials(study_, {SampleTrial(2, 1, /*gang_size=*/2), SampleTrial()});
  ASSERT_TRUE(
      store_->LeaseTrial(ids[0], {"a", "b"}, In(absl::Minutes(5))).ok());
  ExpectErrorWritesNothing(
      [&] { return store_->ReleaseLease(ids[0], "c", "stopping"); },
      absl::StatusCode::kFailedPrecondition, "agent c does not hold");
  ExpectErrorWritesNothing(
      [&] { return store_->ReleaseLease(ids[1], "a", "stopping"); },
      absl::StatusCode::kFailedPrecondition, "queued");
  ExpectErrorWritesNothing(
      [&] { return store_->ReleaseLease(555, "a", "stopping"); },
      absl::StatusCode::kNotFound, "trial 555");
  ASSERT_TRUE(store_->ReleaseLease(ids[0], "b", "SIGTERM").ok());
  Trial t = GetTrialOrDie(ids[0]);
  EXPECT_EQ(t.status, TrialState::kQueued);
  EXPECT_EQ(t.attempts, 0);
  EXPECT_EQ(t.reason, "handed back by agent b: SIGTERM");
  EXPECT_TRUE(t.lease_agent_ids.empty());  // the whole gang's lease
  EXPECT_FALSE(t.started_at.has_value());
  // The gang's other agent finds its lease gone.
  ExpectErrorWritesNothing(
      [&] {
        return store_->ReportTrial(ids[0], "a", SampleResult(), clock_.Now());
      },
      absl::StatusCode::kFailedPrecondition, "does not hold");
  // Handed back after the study ended: nothing left to run it for.
  ASSERT_TRUE(store_->LeaseTrial(ids[1], {"c"}, In(absl::Minutes(5))).ok());
  ASSERT_TRUE(store_->SetStudyStatus(study_, StudyStatus::kCancelled, "").ok());
  ASSERT_TRUE(store_->ReleaseLease(ids[1], "c", "").ok());
  t = GetTrialOrDie(ids[1]);
  EXPECT_EQ(t.status, TrialState::kCancelled);
  EXPECT_EQ(t.finished_at, clock_.Now());
  EXPECT_EQ(t.attempts, 0);
}

// A lease that ends without a result after its study ended is cancelled
// (as a hand-back is), whichever way it ends: nothing may run it again.
TEST_F(LeaseTest, ALostLeaseOfAFinalStudyIsCancelledNotRequeued) {
  const std::vector<int64_t> ids =
      MakeTrials(study_, {SampleTrial(), SampleTrial(), SampleTrial()});
  ASSERT_TRUE(store_->LeaseTrial(ids[0], {"a"}, In(absl::Minutes(5))).ok());
  ASSERT_TRUE(store_->LeaseTrial(ids[1], {"b"}, In(absl::Hours(1))).ok());
  ASSERT_TRUE(store_->LeaseTrial(ids[2], {"c"}, In(absl::Hours(1))).ok());
  ASSERT_TRUE(store_->SetStudyStatus(study_, StudyStatus::kCancelled, "").ok());
  clock_.Advance(absl::Minutes(6));
  absl::StatusOr<RequeueResult> expired =
      store_->RequeueExpiredLeases(clock_.Now());
  ASSERT_TRUE(expired.ok()) << expired.status();
  EXPECT_EQ(expired->cancelled, std::vector<int64_t>{ids[0]});
  EXPECT_TRUE(expired->requeued.empty() && expired->crashed.empty());
  absl::StatusOr<RequeueResult> infra =
      store_->EndLeaseByInfrastructureFailure(ids[1], "b", "node lost");
  ASSERT_TRUE(infra.ok()) << infra.status();
  EXPECT_EQ(infra->cancelled, std::vector<int64_t>{ids[1]});
  absl::StatusOr<RequeueResult> gone = store_->RequeueTrialsOf("c");
  ASSERT_TRUE(gone.ok()) << gone.status();
  EXPECT_EQ(gone->cancelled, std::vector<int64_t>{ids[2]});
  for (int64_t id : ids) {
    const Trial t = GetTrialOrDie(id);
    EXPECT_EQ(t.status, TrialState::kCancelled) << id;
    EXPECT_EQ(t.attempts, 0) << id;
    EXPECT_TRUE(t.lease_agent_ids.empty()) << id;
    EXPECT_EQ(t.finished_at, clock_.Now()) << id;
    EXPECT_TRUE(absl::StrContains(t.reason, "study is final: cancelled"))
        << t.reason;
  }
}

TEST_F(LeaseTest, ExpiredLeasesAreRequeuedUntilMaxAttempts) {
  const std::vector<int64_t> ids =
      MakeTrials(study_, {SampleTrial(), SampleTrial()});
  // ids[1] holds a long lease throughout and must not be touched.
  ASSERT_TRUE(store_->LeaseTrial(ids[1], {"c"}, In(absl::Hours(10))).ok());
  for (int64_t attempt = 1; attempt <= 2; ++attempt) {
    ASSERT_TRUE(store_->LeaseTrial(ids[0], {"a"}, In(absl::Minutes(5))).ok());
    clock_.Advance(absl::Minutes(4));
    auto early = store_->RequeueExpiredLeases(clock_.Now());
    ASSERT_TRUE(early.ok());
    EXPECT_TRUE(early->requeued.empty() && early->crashed.empty());
    clock_.Advance(absl::Minutes(1));  // exactly at the expiry
    auto requeued = store_->RequeueExpiredLeases(clock_.Now());
    ASSERT_TRUE(requeued.ok());
    EXPECT_EQ(requeued->requeued, std::vector<int64_t>{ids[0]});
    EXPECT_TRUE(requeued->crashed.empty());
    const Trial t = GetTrialOrDie(ids[0]);
    EXPECT_EQ(t.status, TrialState::kQueued);
    EXPECT_EQ(t.attempts, attempt);
    EXPECT_TRUE(absl::StrContains(t.reason, "lease expired (agents a)"))
        << t.reason;
    EXPECT_TRUE(absl::StrContains(t.reason, absl::StrCat(attempt, " of 3")))
        << t.reason;
    EXPECT_FALSE(t.lease_expires_at.has_value());
    EXPECT_FALSE(t.started_at.has_value());
    EXPECT_EQ(t.lost_lease_agent_ids, std::vector<std::string>{"a"});
    // An agent that never held it reports: refused.
    ExpectErrorWritesNothing(
        [&] {
          return store_->ReportTrial(ids[0], "c", SampleResult(), clock_.Now());
        },
        absl::StatusCode::kFailedPrecondition, "does not hold");
  }
  ASSERT_TRUE(store_->LeaseTrial(ids[0], {"b"}, In(absl::Minutes(5))).ok());
  clock_.Advance(absl::Minutes(6));
  auto last = store_->RequeueExpiredLeases(clock_.Now());
  ASSERT_TRUE(last.ok());
  EXPECT_TRUE(last->requeued.empty());
  EXPECT_EQ(last->crashed, std::vector<int64_t>{ids[0]});
  const Trial t = GetTrialOrDie(ids[0]);
  EXPECT_EQ(t.status, TrialState::kCrash);
  EXPECT_EQ(t.attempts, 3);
  EXPECT_TRUE(absl::StrContains(t.reason, "gave up after 3 lost leases"))
      << t.reason;
  EXPECT_TRUE(absl::StrContains(t.reason, "agents b")) << t.reason;
  EXPECT_EQ(t.finished_at, clock_.Now());
  EXPECT_TRUE(t.started_at.has_value());
  EXPECT_EQ(GetTrialOrDie(ids[1]).status, TrialState::kLeased);
  ExpectErrorWritesNothing(
      [&] { return store_->LeaseTrial(ids[0], {"a"}, In(absl::Minutes(5))); },
      absl::StatusCode::kFailedPrecondition, "is crash, not queued");
}

// Issue 28: a finished result is never lost. The holder of a lease that
// expired (the planner did not hear it in time) reports late: taken while
// the trial was not leased again and its study is not final, with the lost
// lease's attempt given back; refused, saying why, once it was leased again
// or its study ended.
TEST_F(LeaseTest, ALateReportOfATrialNotLeasedAgainIsTaken) {
  const std::vector<int64_t> ids =
      MakeTrials(study_, {SampleTrial(), SampleTrial(), SampleTrial()});
  // Expired, not leased again: taken.
  ASSERT_TRUE(store_->LeaseTrial(ids[0], {"a"}, In(absl::Minutes(1))).ok());
  clock_.Advance(absl::Minutes(2));
  ASSERT_TRUE(store_->RequeueExpiredLeases(clock_.Now()).ok());
  ASSERT_EQ(GetTrialOrDie(ids[0]).attempts, 1);
  ASSERT_TRUE(
      store_->ReportTrial(ids[0], "a", SampleResult(), clock_.Now()).ok());
  Trial t = GetTrialOrDie(ids[0]);
  EXPECT_EQ(t.status, TrialState::kOk);
  EXPECT_EQ(t.reported_by, "a");
  EXPECT_EQ(t.attempts, 0);
  EXPECT_TRUE(t.lost_lease_agent_ids.empty());
  // A retry finds it stored.
  EXPECT_EQ(
      store_->ReportTrial(ids[0], "a", SampleResult(), clock_.Now()).code(),
      absl::StatusCode::kAlreadyExists);

  // Expired, then leased again to "b": the late report is refused naming
  // the new holder, and b's report is the trial's.
  ASSERT_TRUE(store_->LeaseTrial(ids[1], {"a"}, In(absl::Minutes(1))).ok());
  clock_.Advance(absl::Minutes(2));
  ASSERT_TRUE(store_->RequeueExpiredLeases(clock_.Now()).ok());
  ASSERT_TRUE(store_->LeaseTrial(ids[1], {"b"}, In(absl::Minutes(1))).ok());
  EXPECT_TRUE(GetTrialOrDie(ids[1]).lost_lease_agent_ids.empty());
  ExpectErrorWritesNothing(
      [&] {
        return store_->ReportTrial(ids[1], "a", SampleResult(), clock_.Now());
      },
      absl::StatusCode::kFailedPrecondition, "held by b");
  ASSERT_TRUE(
      store_->ReportTrial(ids[1], "b", SampleResult(), clock_.Now()).ok());

  // Expired, then the study ended: refused, saying so.
  ASSERT_TRUE(store_->LeaseTrial(ids[2], {"a"}, In(absl::Minutes(1))).ok());
  clock_.Advance(absl::Minutes(2));
  ASSERT_TRUE(store_->RequeueExpiredLeases(clock_.Now()).ok());
  ASSERT_TRUE(
      store_->SetStudyStatus(study_, StudyStatus::kDone, "finished").ok());
  ExpectErrorWritesNothing(
      [&] {
        return store_->ReportTrial(ids[2], "a", SampleResult(), clock_.Now());
      },
      absl::StatusCode::kFailedPrecondition, "its lease was lost and study");
}

TEST_F(LeaseTest, RequeueTrialsOfAnAgent) {
  const std::vector<int64_t> ids =
      MakeTrials(study_, {SampleTrial(), SampleTrial(), SampleTrial()});
  ASSERT_TRUE(store_->LeaseTrial(ids[0], {"a"}, In(absl::Minutes(5))).ok());
  ASSERT_TRUE(store_->LeaseTrial(ids[1], {"b"}, In(absl::Minutes(5))).ok());
  ASSERT_TRUE(store_->LeaseTrial(ids[2], {"a"}, In(absl::Minutes(5))).ok());
  ASSERT_TRUE(store_->MarkAgentGone("a").ok());
  auto requeued = store_->RequeueTrialsOf("a");
  ASSERT_TRUE(requeued.ok());
  EXPECT_EQ(requeued->requeued, (std::vector<int64_t>{ids[0], ids[2]}));
  const Trial t = GetTrialOrDie(ids[0]);
  EXPECT_EQ(t.status, TrialState::kQueued);
  EXPECT_EQ(t.attempts, 1);
  EXPECT_TRUE(absl::StrContains(t.reason, "agent a stopped")) << t.reason;
  EXPECT_EQ(GetTrialOrDie(ids[1]).status, TrialState::kLeased);
  auto none = store_->RequeueTrialsOf("a");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->requeued.empty());
  ExpectErrorWritesNothing(
      [&] { return store_->RequeueTrialsOf("ghost").status(); },
      absl::StatusCode::kNotFound, "agent ghost");
}

TEST_F(LeaseTest, CancelQueuedTrialsLeavesLeasedOnesRunning) {
  const std::vector<int64_t> ids =
      MakeTrials(study_, {SampleTrial(), SampleTrial(), SampleTrial()});
  const int64_t other = MakeStudy();
  const int64_t other_trial = MakeTrials(other, {SampleTrial()})[0];
  ASSERT_TRUE(store_->LeaseTrial(ids[1], {"a"}, In(absl::Minutes(5))).ok());
  clock_.Advance(absl::Seconds(3));
  auto cancelled = store_->CancelQueuedTrials(study_);
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(*cancelled, 2);
  EXPECT_EQ(GetTrialOrDie(ids[0]).status, TrialState::kCancelled);
  EXPECT_EQ(GetTrialOrDie(ids[0]).finished_at, clock_.Now());
  EXPECT_EQ(GetTrialOrDie(ids[1]).status, TrialState::kLeased);
  EXPECT_EQ(GetTrialOrDie(other_trial).status, TrialState::kQueued);
  // The running trial still reports.
  EXPECT_TRUE(
      store_->ReportTrial(ids[1], "a", SampleResult(), clock_.Now()).ok());
  EXPECT_EQ(*store_->CancelQueuedTrials(study_), 0);
  ExpectErrorWritesNothing(
      [&] { return store_->CancelQueuedTrials(404).status(); },
      absl::StatusCode::kNotFound, "study 404");
}

TEST(LeaseMaxAttemptsTest, OneAttemptGivesUpAtTheFirstLoss) {
  ::tessera::db::testing::TempDir dir;
  ::tessera::db::testing::ManualClock clock;
  auto store = ::tessera::db::testing::OpenStore(dir.File("a.db"), clock,
                                                 /*max_attempts=*/1);
  auto study = store->CreateStudy(::tessera::db::testing::SampleStudy());
  ASSERT_TRUE(study.ok());
  auto ids = store->AddTrials(study->id, {SampleTrial()});
  ASSERT_TRUE(ids.ok());
  ASSERT_TRUE(
      store->UpsertAgent(::tessera::db::testing::SampleAgent("a")).ok());
  ASSERT_TRUE(store->LeaseTrial((*ids)[0], {"a"}, clock.Now()).ok());
  auto r = store->RequeueExpiredLeases(clock.Now());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->crashed, *ids);
}

}  // namespace
}  // namespace tessera::db
