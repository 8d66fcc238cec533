#include "service/background_pool.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tessera::service {
namespace {

BackgroundPoolOptions Clamped(BackgroundPoolOptions o) {
  o.threads = std::max(o.threads, 1);
  o.max_queued = std::max(o.max_queued, 0);
  o.nice_increment = std::clamp(o.nice_increment, 0, 19);
  return o;
}

}  // namespace

void LowerThisThreadsPriority(int increment) {
  if (increment == 0) return;
  const pid_t tid = gettid();
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
  if (errno != 0) return;
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(tid),
                    std::min(now + increment, 19));
}

BackgroundPool::BackgroundPool(BackgroundPoolOptions options)
    : options_(Clamped(options)) {
  workers_.reserve(static_cast<size_t>(options_.threads));
  for (int i = 0; i < options_.threads; ++i) {
    workers_.emplace_back([this] { Work(); });
  }
}

BackgroundPool::~BackgroundPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& w : workers_) w.join();
}

bool BackgroundPool::TrySubmit(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  if (running_ + static_cast<int>(queue_.size()) >=
      options_.threads + options_.max_queued) {
    return false;
  }
  queue_.push_back(std::move(task));
  return true;
}

std::string BackgroundPool::Load() const {
  absl::MutexLock lock(&mu_);
  return absl::StrCat(running_, " running, ", queue_.size(),
                      " queued (at most ", options_.threads, " and ",
                      options_.max_queued, ")");
}

void BackgroundPool::Work() {
  LowerThisThreadsPriority(options_.nice_increment);
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](BackgroundPool* p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(p->mu_) {
            return p->stopping_ || !p->queue_.empty();
          },
          this));
      if (queue_.empty()) return;  // stopping, nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    task();
    absl::MutexLock lock(&mu_);
    --running_;
  }
}

}  // namespace tessera::service
