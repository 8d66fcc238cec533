// Studies in the SQLite store: create, get, list, status and recommendation,
// with every error leaving the database as it was.
#include <functional>

#include "absl/strings/match.h"
#include "db/sqlite_trial_store.h"
#include "gtest/gtest.h"
#include "tests/db/test_util.h"

namespace tessera::db {
namespace {

using ::tessera::db::testing::SampleStudy;
using ::tessera::db::testing::TempDir;
using ::tessera::db::testing::With;

using StudyStoreTest = ::tessera::db::testing::StoreTest;

TEST_F(StudyStoreTest, CreateThenGetKeepsEveryField) {
  const NewStudy in = SampleStudy();
  absl::StatusOr<Study> created = store_->CreateStudy(in);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_GT(created->id, 0);
  absl::StatusOr<Study> got = store_->GetStudy(created->id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->id, created->id);
  EXPECT_EQ(got->name, in.name);
  EXPECT_EQ(got->spec_json, in.spec_json);
  EXPECT_EQ(got->model, in.model);
  EXPECT_EQ(got->gpu, in.gpu);
  EXPECT_EQ(got->nodes, 2);
  EXPECT_EQ(got->gpus_per_node, 8);
  EXPECT_EQ(got->trial_budget, 40);
  EXPECT_EQ(got->time_budget_s, 3600);
  EXPECT_EQ(got->status, StudyStatus::kQueued);
  EXPECT_EQ(got->status_reason, "");
  EXPECT_EQ(got->recommendation_json, "");
  EXPECT_EQ(got->created_at, clock_.Now());
  EXPECT_EQ(got->updated_at, clock_.Now());
  EXPECT_EQ(created->created_at, got->created_at);

  absl::StatusOr<Study> second = store_->CreateStudy(in);
  ASSERT_TRUE(second.ok());
  EXPECT_GT(second->id, created->id);
}

TEST_F(StudyStoreTest, CreateRejectsBadFieldsAndWritesNothing) {
  ASSERT_TRUE(store_->CreateStudy(SampleStudy()).ok());
  const std::pair<std::function<void(NewStudy&)>, const char*> cases[] = {
      {[](NewStudy& s) { s.name = ""; }, "study.name"},
      {[](NewStudy& s) { s.spec_json = "{not json"; }, "study.spec_json"},
      {[](NewStudy& s) { s.model = ""; }, "study.model"},
      {[](NewStudy& s) { s.gpu = ""; }, "study.gpu"},
      {[](NewStudy& s) { s.nodes = 0; }, "study.nodes"},
      {[](NewStudy& s) { s.gpus_per_node = -1; }, "study.gpus_per_node"},
      {[](NewStudy& s) { s.trial_budget = -1; }, "study.trial_budget"},
      {[](NewStudy& s) { s.time_budget_s = -2; }, "study.time_budget_s"},
  };
  for (const auto& [mutate, field] : cases) {
    NewStudy s = SampleStudy();
    mutate(s);
    ExpectErrorWritesNothing([&] { return store_->CreateStudy(s).status(); },
                             absl::StatusCode::kInvalidArgument, field);
  }
}

TEST_F(StudyStoreTest, GetUnknownIsNotFound) {
  absl::StatusOr<Study> got = store_->GetStudy(42);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(got.status().message(), "study 42"));
}

TEST_F(StudyStoreTest, ListIsNewestFirstAndFilters) {
  std::vector<int64_t> ids;
  const std::pair<const char*, const char*> specs[] = {
      {"llama2-7b", "H100-SXM"},
      {"llama2-13b", "H100-SXM"},
      {"llama2-7b", "A100-SXM4-80GB"},
      {"llama2-7b", "H100-SXM"},
  };
  for (const auto& [model, gpu] : specs) {
    auto s = store_->CreateStudy(SampleStudy("s", model, gpu));
    ASSERT_TRUE(s.ok());
    ids.push_back(s->id);
    clock_.Advance(absl::Minutes(1));
  }
  ASSERT_TRUE(store_->SetStudyStatus(ids[1], StudyStatus::kRunning, "").ok());
  ASSERT_TRUE(
      store_->SetStudyStatus(ids[2], StudyStatus::kDone, "best found").ok());

  auto ids_of = [](const std::vector<Study>& studies) {
    std::vector<int64_t> out;
    for (const Study& s : studies) out.push_back(s.id);
    return out;
  };
  auto all = store_->ListStudies({});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(ids_of(*all),
            (std::vector<int64_t>{ids[3], ids[2], ids[1], ids[0]}));
  auto h100_7b = store_->ListStudies(With<StudyFilter>([](auto& f) {
    f.model = "llama2-7b";
    f.gpu = "H100-SXM";
  }));
  ASSERT_TRUE(h100_7b.ok());
  EXPECT_EQ(ids_of(*h100_7b), (std::vector<int64_t>{ids[3], ids[0]}));
  auto active = store_->ListStudies(With<StudyFilter>([](auto& f) {
    f.statuses = {StudyStatus::kQueued, StudyStatus::kRunning};
  }));
  ASSERT_TRUE(active.ok());
  EXPECT_EQ(ids_of(*active), (std::vector<int64_t>{ids[3], ids[1], ids[0]}));
  auto done = store_->ListStudies(
      With<StudyFilter>([](auto& f) { f.statuses = {StudyStatus::kDone}; }));
  ASSERT_TRUE(done.ok());
  ASSERT_EQ(done->size(), 1u);
  EXPECT_EQ((*done)[0].status_reason, "best found");
  auto newest_two =
      store_->ListStudies(With<StudyFilter>([](auto& f) { f.limit = 2; }));
  ASSERT_TRUE(newest_two.ok());
  EXPECT_EQ(ids_of(*newest_two), (std::vector<int64_t>{ids[3], ids[2]}));
  EXPECT_EQ(
      store_->ListStudies(With<StudyFilter>([](auto& f) { f.limit = -1; }))
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
}

TEST_F(StudyStoreTest, StatusMovesForwardOnly) {
  auto s = store_->CreateStudy(SampleStudy());
  ASSERT_TRUE(s.ok());
  clock_.Advance(absl::Seconds(5));
  ASSERT_TRUE(store_->SetStudyStatus(s->id, StudyStatus::kRunning, "go").ok());
  auto got = store_->GetStudy(s->id);
  EXPECT_EQ(got->status, StudyStatus::kRunning);
  EXPECT_EQ(got->status_reason, "go");
  EXPECT_EQ(got->updated_at, clock_.Now());
  EXPECT_EQ(got->created_at, clock_.Now() - absl::Seconds(5));

  ExpectErrorWritesNothing(
      [&] { return store_->SetStudyStatus(s->id, StudyStatus::kQueued, ""); },
      absl::StatusCode::kFailedPrecondition, "running");
  ASSERT_TRUE(
      store_->SetStudyStatus(s->id, StudyStatus::kCancelled, "user").ok());
  ExpectErrorWritesNothing(
      [&] { return store_->SetStudyStatus(s->id, StudyStatus::kRunning, ""); },
      absl::StatusCode::kFailedPrecondition, "final");
  ExpectErrorWritesNothing(
      [&] { return store_->SetStudyStatus(s->id, StudyStatus::kDone, ""); },
      absl::StatusCode::kFailedPrecondition, "cancelled");
  ExpectErrorWritesNothing(
      [&] { return store_->SetStudyStatus(999, StudyStatus::kDone, ""); },
      absl::StatusCode::kNotFound, "study 999");
}

TEST_F(StudyStoreTest, RecommendationIsJsonAndMayImprove) {
  auto s = store_->CreateStudy(SampleStudy());
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(store_->SetRecommendation(s->id, R"({"best": 1})").ok());
  ASSERT_TRUE(store_->SetRecommendation(s->id, R"({"best": 2})").ok());
  EXPECT_EQ(store_->GetStudy(s->id)->recommendation_json, R"({"best": 2})");
  ExpectErrorWritesNothing(
      [&] { return store_->SetRecommendation(s->id, "{broken"); },
      absl::StatusCode::kInvalidArgument, "study.recommendation_json");
  ExpectErrorWritesNothing([&] { return store_->SetRecommendation(77, "{}"); },
                           absl::StatusCode::kNotFound, "study 77");
}

TEST(SqliteTrialStoreOpenTest, RefusesInMemoryAndBadOptions) {
  EXPECT_EQ(SqliteTrialStore::Open(":memory:").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SqliteTrialStore::Open("").status().code(),
            absl::StatusCode::kInvalidArgument);
  TempDir dir;
  SqliteTrialStoreOptions options;
  options.max_attempts = 0;
  EXPECT_EQ(SqliteTrialStore::Open(dir.File("x.db"), options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::db
