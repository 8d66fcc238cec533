// std::mutex with clang's thread-safety annotations, so that `clang
// -Wthread-safety` (TESSERA_THREAD_SAFETY_ANALYSIS) checks which members
// each lock guards here as it does in the planner. The communicators keep
// std::mutex rather than absl::Mutex because ThreadSanitizer understands it
// (Debian's Abseil is built without TSan annotations): this changes only
// what the compiler can check, not the lock.
//
//   Mutex mu_;
//   int count_ ABSL_GUARDED_BY(mu_);
//   {
//     MutexLock lock(mu_);
//     changed_.wait(lock.native(), [&] {
//       mu_.AssertHeld();  // lambdas are analysed on their own
//       return count_ > 0;
//     });
//   }
#pragma once

#include <mutex>

#include "absl/base/thread_annotations.h"

namespace tessera::executor::comm_internal {

class ABSL_LOCKABLE Mutex {
 public:
  // Tells the analysis that the calling thread holds it (a condition
  // variable's predicate runs with it held, but is analysed apart). Checks
  // nothing at run time.
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex for its scope, as std::unique_lock does; Unlock and Lock
// release and take it again within the scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu)
      : lock_(mu.mu_) {}
  ~MutexLock() ABSL_UNLOCK_FUNCTION() {}

  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { lock_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { lock_.unlock(); }
  // For std::condition_variable's waits (which release and retake it).
  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace tessera::executor::comm_internal
