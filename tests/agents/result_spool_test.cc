#include "agents/result_spool.h"

#include <sys/stat.h>

#include <filesystem>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agents/files.h"
#include "core/file_io.h"
#include "gtest/gtest.h"

namespace tessera::agents {
namespace {

class ResultSpoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> dir =
        MakeUniqueDirectory(::testing::TempDir(), "spool-test-");
    ASSERT_TRUE(dir.ok()) << dir.status();
    root_ = *dir;
  }
  void TearDown() override { (void)RemoveTree(root_); }

  ResultSpool OpenOrDie(const std::string& dir, ResultSpoolOptions o = {}) {
    absl::StatusOr<ResultSpool> spool = ResultSpool::Open(dir, o);
    EXPECT_TRUE(spool.ok()) << spool.status();
    return *std::move(spool);
  }
  // The names of the files in `dir`.
  static std::set<std::string> Names(const std::string& dir) {
    std::set<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      names.insert(e.path().filename().string());
    }
    return names;
  }
  static mode_t Mode(const std::string& path) {
    struct stat st;
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return st.st_mode & 0777;
  }

  std::string root_;
};

TEST_F(ResultSpoolTest, PutListRemoveRoundTrip) {
  const std::string dir = root_ + "/a/b/spool";  // parents missing too
  ResultSpool spool = OpenOrDie(dir);
  EXPECT_EQ(spool.dir(), dir);
  EXPECT_EQ(Mode(dir), 0700u);
  ASSERT_TRUE(spool.Put(7, R"({"status":"ok","n":7})").ok());
  ASSERT_TRUE(spool.Put(3, R"({"status":"oom"})").ok());
  EXPECT_EQ(spool.PathOf(7), dir + "/trial-7.json");
  EXPECT_EQ(Mode(spool.PathOf(7)), 0600u);
  EXPECT_EQ(Names(dir),
            (std::set<std::string>{"trial-3.json", "trial-7.json"}));

  absl::StatusOr<SpoolListing> listed = spool.List();
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_TRUE(listed->errors.empty());
  ASSERT_EQ(listed->results.size(), 2u);
  EXPECT_EQ(listed->results[0].trial_id, 3);
  EXPECT_EQ(listed->results[0].result_json, R"({"status":"oom"})");
  EXPECT_EQ(listed->results[1].trial_id, 7);
  EXPECT_EQ(listed->results[1].result_json, R"({"status":"ok","n":7})");

  // A second Put of the same trial replaces its entry.
  ASSERT_TRUE(spool.Put(7, R"({"status":"ok","n":8})").ok());
  ASSERT_TRUE(spool.Remove(3).ok());
  ASSERT_TRUE(spool.Remove(3).ok());  // nothing left to remove: OK
  // A new spool object on the same folder (a restarted agent) finds it.
  ResultSpool again = OpenOrDie(dir);
  listed = again.List();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->results.size(), 1u);
  EXPECT_EQ(listed->results[0].trial_id, 7);
  EXPECT_EQ(listed->results[0].result_json, R"({"status":"ok","n":8})");
  ASSERT_TRUE(again.Remove(7).ok());
  EXPECT_TRUE(Names(dir).empty());  // no temporary file left either
}

TEST_F(ResultSpoolTest, ALeftoverTemporaryFileIsIgnoredAndCleared) {
  ResultSpool spool = OpenOrDie(root_ + "/spool");
  ASSERT_TRUE(spool.Put(4, "{}").ok());
  // What a Put interrupted before its rename leaves: half a result.
  const std::string temp = root_ + "/spool/.trial-5.json.tmp-123-0";
  ASSERT_TRUE(WriteFileAtomically(temp, R"({"status":"o)").ok());
  absl::StatusOr<SpoolListing> listed = spool.List();
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->errors.empty());
  ASSERT_EQ(listed->results.size(), 1u);
  EXPECT_EQ(listed->results[0].trial_id, 4);
  EXPECT_EQ(Names(root_ + "/spool"), std::set<std::string>{"trial-4.json"});
}

TEST_F(ResultSpoolTest, AnUnusableEntryIsNamedAndMovedAside) {
  ResultSpoolOptions small;
  small.max_result_bytes = 64;
  const std::string dir = root_ + "/spool";
  ResultSpool spool = OpenOrDie(dir, small);
  ASSERT_TRUE(spool.Put(1, R"({"ok":true})").ok());
  ASSERT_TRUE(WriteFileAtomically(dir + "/trial-2.json", "{not json").ok());
  ASSERT_TRUE(WriteFileAtomically(dir + "/trial-3.json", "").ok());
  ASSERT_TRUE(
      WriteFileAtomically(dir + "/trial-4.json",
                          absl::StrCat("\"", std::string(100, 'x'), "\""))
          .ok());
  ASSERT_TRUE(WriteFileAtomically(dir + "/trial-x.json", "{}").ok());
  ASSERT_TRUE(WriteFileAtomically(dir + "/notes.txt", "not ours").ok());

  absl::StatusOr<SpoolListing> listed = spool.List();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->results.size(), 1u);  // the good one is still there
  EXPECT_EQ(listed->results[0].trial_id, 1);
  ASSERT_EQ(listed->errors.size(), 4u);
  const struct {
    const char* name;
    const char* why;
  } expected[] = {{"trial-2.json", "not valid JSON"},
                  {"trial-3.json", "empty"},
                  {"trial-4.json", "over the 64 bytes"},
                  {"trial-x.json", "no trial id"}};
  for (size_t i = 0; i < 4; ++i) {
    const std::string message(listed->errors[i].message());
    EXPECT_EQ(listed->errors[i].code(), absl::StatusCode::kDataLoss);
    EXPECT_TRUE(absl::StrContains(message, dir + "/" + expected[i].name))
        << message;
    EXPECT_TRUE(absl::StrContains(message, expected[i].why)) << message;
    EXPECT_TRUE(absl::StrContains(message, "moved aside")) << message;
  }
  EXPECT_EQ(Names(dir),
            (std::set<std::string>{"trial-1.json", "trial-2.json.bad",
                                   "trial-3.json.bad", "trial-4.json.bad",
                                   "trial-x.json.bad", "notes.txt"}));
  // Reported once, not at every start.
  listed = spool.List();
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->errors.empty());
  EXPECT_EQ(listed->results.size(), 1u);
}

TEST_F(ResultSpoolTest, TheSpoolIsBounded) {
  EXPECT_EQ(kMaxSpooledResultBytes, 1 << 20);  // the planner's kMaxReportBytes
  EXPECT_EQ(ResultSpoolOptions{}.max_entries, 1000);
  ResultSpoolOptions small;
  small.max_entries = 3;
  small.max_result_bytes = 16;
  ResultSpool spool = OpenOrDie(root_ + "/spool", small);
  for (int64_t id = 1; id <= 3; ++id) ASSERT_TRUE(spool.Put(id, "{}").ok());
  absl::Status full = spool.Put(4, "{}");
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(full.message(), "is full")) << full;
  EXPECT_TRUE(absl::StrContains(full.message(), "at most 3")) << full;
  // Replacing a spooled trial's entry is no new entry.
  EXPECT_TRUE(spool.Put(2, "[]").ok());
  ASSERT_TRUE(spool.Remove(1).ok());
  EXPECT_TRUE(spool.Put(4, "{}").ok());

  absl::Status big =
      spool.Put(5, absl::StrCat("\"", std::string(20, 'x'), "\""));
  EXPECT_EQ(big.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(big.message(), "over the 16 bytes")) << big;
  EXPECT_EQ(spool.Put(5, "{half").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(spool.Put(0, "{}").code(), absl::StatusCode::kInvalidArgument);
  // A refused Put leaves nothing behind.
  EXPECT_EQ(
      Names(root_ + "/spool"),
      (std::set<std::string>{"trial-2.json", "trial-3.json", "trial-4.json"}));
}

TEST_F(ResultSpoolTest, RefusesAFolderOthersMayWriteOrAFile) {
  const std::string open = root_ + "/open";
  ASSERT_TRUE(MakeDirectories(open).ok());
  ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
  absl::StatusOr<ResultSpool> spool = ResultSpool::Open(open);
  EXPECT_EQ(spool.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(spool.status().message(), open));
  ASSERT_TRUE(WriteFileAtomically(root_ + "/file", "x").ok());
  spool = ResultSpool::Open(root_ + "/file");
  EXPECT_EQ(spool.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tessera::agents
