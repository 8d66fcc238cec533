// Group commit (db/group_commit.h): writes that arrive while one commits
// share the next transaction, each in its own savepoint: a write that fails
// changes nothing and the others commit; each caller learns its own status.
#include "db/group_commit.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/db/test_util.h"

namespace tessera::db {
namespace {

using ::tessera::db::testing::TempDir;

// A database with a table of unique values, its writes batched.
class GroupCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DatabaseOptions options;
    options.synchronous = Synchronous::kNormal;
    absl::StatusOr<std::unique_ptr<Database>> db =
        Database::Open(dir_.File("g.db"), options);
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = *std::move(db);
    ASSERT_TRUE(db_->Exec("CREATE TABLE t (x INTEGER UNIQUE)").ok());
    commits_ = std::make_unique<GroupCommit>(
        64, [this](const std::vector<const GroupCommit::Body*>& bodies,
                   Synchronous) {
          return RunBatchInTransaction(*db_, TransactionMode::kImmediate,
                                       bodies);
        });
  }

  // Inserts x, then returns `then` (an error undoes the insert).
  static GroupCommit::Body Insert(int64_t x,
                                  absl::Status then = absl::OkStatus()) {
    return [x, then](Database& db) -> absl::Status {
      absl::StatusOr<Statement> insert =
          db.Prepare("INSERT INTO t (x) VALUES (?)");
      if (!insert.ok()) return insert.status();
      insert->BindInt(1, x);
      if (absl::Status s = insert->Run(); !s.ok()) return s;
      return then;
    };
  }

  bool Stored(int64_t x) {
    absl::StatusOr<Statement> q =
        db_->Prepare("SELECT count(*) FROM t WHERE x = ?");
    EXPECT_TRUE(q.ok());
    q->BindInt(1, x);
    absl::StatusOr<bool> row = q->Step();
    return row.ok() && *row && q->ColumnInt(0) == 1;
  }

  // Runs `bodies` from threads of their own while a first write (x = 0)
  // holds the writer, so that all of them wait and commit as one batch.
  std::vector<absl::Status> RunAsOneBatch(
      const std::vector<GroupCommit::Body>& bodies) {
    absl::Notification release;
    const GroupCommit::Body first = [&](Database& db) -> absl::Status {
      release.WaitForNotification();
      return Insert(0)(db);
    };
    std::thread holder([&] {
      EXPECT_TRUE(commits_->Run(first, Synchronous::kNormal).ok());
    });
    while (!commits_->running()) absl::SleepFor(absl::Milliseconds(1));
    std::vector<absl::Status> statuses(bodies.size());
    std::vector<std::thread> writers;
    for (size_t i = 0; i < bodies.size(); ++i) {
      writers.emplace_back([&, i] {
        statuses[i] = commits_->Run(bodies[i], Synchronous::kNormal);
      });
    }
    while (commits_->waiting() < static_cast<int64_t>(bodies.size())) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    release.Notify();
    holder.join();
    for (std::thread& w : writers) w.join();
    return statuses;
  }

  TempDir dir_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<GroupCommit> commits_;
};

TEST_F(GroupCommitTest, WritesThatArriveDuringACommitShareTheNext) {
  std::vector<GroupCommit::Body> bodies;
  for (int64_t x = 1; x <= 20; ++x) bodies.push_back(Insert(x));
  const std::vector<absl::Status> statuses = RunAsOneBatch(bodies);
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
  for (int64_t x = 0; x <= 20; ++x) EXPECT_TRUE(Stored(x)) << x;
  // The first write alone, then the twenty together.
  EXPECT_EQ(commits_->batches(), 2);
  EXPECT_EQ(commits_->writes(), 21);
}

TEST_F(GroupCommitTest, AWriteThatFailsChangesNothingAndTheOthersCommit) {
  const std::vector<absl::Status> statuses = RunAsOneBatch(
      {Insert(1), Insert(2, absl::FailedPreconditionError("trial 2: no")),
       Insert(3),
       Insert(1),  // a constraint sqlite refuses: AlreadyExists
       Insert(4)});
  // The two inserts of 1 race for the queue: whichever the batch runs first
  // commits, the other is refused.
  const bool first_won = statuses[0].ok();
  EXPECT_TRUE(first_won || statuses[3].ok()) << statuses[0] << statuses[3];
  EXPECT_EQ(statuses[first_won ? 3 : 0].code(),
            absl::StatusCode::kAlreadyExists)
      << statuses[first_won ? 3 : 0];
  EXPECT_EQ(statuses[1].code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(statuses[2].ok()) << statuses[2];
  EXPECT_TRUE(statuses[4].ok()) << statuses[4];
  EXPECT_TRUE(Stored(1));
  EXPECT_FALSE(Stored(2)) << "a failed write's insert was committed";
  EXPECT_TRUE(Stored(3));
  EXPECT_TRUE(Stored(4));
  EXPECT_EQ(commits_->batches(), 2);
}

TEST_F(GroupCommitTest, OneWriterAloneCommitsEachWriteByItself) {
  for (int64_t x = 1; x <= 3; ++x) {
    ASSERT_TRUE(commits_->Run(Insert(x), Synchronous::kNormal).ok());
  }
  EXPECT_EQ(commits_->batches(), 3);
  const absl::Status failed = commits_->Run(
      Insert(9, absl::InvalidArgumentError("x: bad")), Synchronous::kNormal);
  EXPECT_EQ(failed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(Stored(9));
}

}  // namespace
}  // namespace tessera::db
