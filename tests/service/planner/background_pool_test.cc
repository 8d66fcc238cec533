// The planner's pool for Plan and Predict (background_pool.h): it runs what
// it accepts, refuses past threads + max_queued instead of growing, runs its
// tasks at a lower CPU priority, and answers everything it accepted before
// it is destroyed.
#include "service/background_pool.h"

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <memory>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace tessera::service {
namespace {

TEST(BackgroundPoolTest, RefusesPastItsThreadsAndQueue) {
  BackgroundPool pool({.threads = 1, .max_queued = 2});
  absl::Notification release;
  absl::Notification first_started;
  std::atomic<int> ran{0};
  ASSERT_TRUE(pool.TrySubmit([&] {
    first_started.Notify();
    release.WaitForNotification();
    ++ran;
  }));
  first_started.WaitForNotification();
  // One runs; two may wait; the fourth is refused, not kept.
  EXPECT_TRUE(pool.TrySubmit([&] { ++ran; }));
  EXPECT_TRUE(pool.TrySubmit([&] { ++ran; }));
  EXPECT_FALSE(pool.TrySubmit([&] { ran += 100; }));
  EXPECT_EQ(pool.Load(), "1 running, 2 queued (at most 1 and 2)");
  release.Notify();
  // Once they ran, there is room again.
  for (int i = 0; i < 200 && ran.load() < 3; ++i) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(ran.load(), 3);
  absl::Notification again;
  EXPECT_TRUE(pool.TrySubmit([&] { again.Notify(); }));
  EXPECT_TRUE(again.WaitForNotificationWithTimeout(absl::Seconds(5)));
}

TEST(BackgroundPoolTest, EveryAcceptedTaskRunsBeforeItIsDestroyed) {
  std::atomic<int> ran{0};
  {
    BackgroundPool pool({.threads = 2, .max_queued = 8});
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(pool.TrySubmit([&] {
        absl::SleepFor(absl::Milliseconds(2));
        ++ran;
      }));
    }
  }
  EXPECT_EQ(ran.load(), 10);
}

TEST(BackgroundPoolTest, TasksRunAtALowerPriorityThanTheCaller) {
  const int caller_nice = getpriority(PRIO_PROCESS, 0);
  if (caller_nice > 9)
    GTEST_SKIP() << "the test already runs at nice " << caller_nice;
  std::atomic<int> task_nice{-100};
  {
    BackgroundPool pool({.threads = 1, .max_queued = 0, .nice_increment = 10});
    ASSERT_TRUE(pool.TrySubmit([&] {
      task_nice = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
    }));
  }
  EXPECT_EQ(task_nice.load(), caller_nice + 10);
  // The caller's own priority is untouched.
  EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())),
            caller_nice);
}

}  // namespace
}  // namespace tessera::service
