// Test helper: binds the calling thread to the first CPU it may run on for
// the scope's lifetime and restores its mask after, so that a test sees
// what a process bound to one CPU (taskset -c N) sees.
//
//   ScopedOneCpuAffinity one;
//   ASSERT_TRUE(one.ok());
//   EXPECT_EQ(UsableCpuCount(), 1);
#pragma once

#include <sched.h>

namespace tessera::testing_util {

class ScopedOneCpuAffinity {
 public:
  ScopedOneCpuAffinity() {
    CPU_ZERO(&saved_);
    if (sched_getaffinity(0, sizeof saved_, &saved_) != 0) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &saved_)) {
        CPU_SET(cpu, &one);
        break;
      }
    }
    ok_ = sched_setaffinity(0, sizeof one, &one) == 0;
  }
  ~ScopedOneCpuAffinity() {
    if (ok_) sched_setaffinity(0, sizeof saved_, &saved_);
  }
  ScopedOneCpuAffinity(const ScopedOneCpuAffinity&) = delete;
  ScopedOneCpuAffinity& operator=(const ScopedOneCpuAffinity&) = delete;

  bool ok() const { return ok_; }
  // The CPUs the thread had before.
  int saved_count() const { return CPU_COUNT(&saved_); }

 private:
  cpu_set_t saved_;
  bool ok_ = false;
};

}  // namespace tessera::testing_util
