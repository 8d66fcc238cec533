#include "db/group_commit.h"

#include <algorithm>
#include <utility>

namespace tessera::db {

GroupCommit::GroupCommit(int max_batch, BatchRunner runner)
    : max_batch_(std::max(1, max_batch)), runner_(std::move(runner)) {}

absl::Status GroupCommit::Run(const Body& body, Synchronous synchronous) {
  Waiter me;
  me.body = &body;
  me.synchronous = synchronous;
  absl::MutexLock lock(&mu_);
  queue_.push_back(&me);
  while (!me.done) {
    if (!running_) {
      LeadOneBatch();
      continue;
    }
    const auto done_or_free = [&me, this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return me.done || !running_;
    };
    mu_.Await(absl::Condition(&done_or_free));
  }
  return me.status;
}

void GroupCommit::LeadOneBatch() {
  running_ = true;
  std::vector<Waiter*> batch;
  while (!queue_.empty() && static_cast<int>(batch.size()) < max_batch_) {
    batch.push_back(queue_.front());
    queue_.pop_front();
  }
  std::vector<const Body*> bodies;
  Synchronous synchronous = Synchronous::kNormal;
  for (const Waiter* w : batch) {
    bodies.push_back(w->body);
    if (w->synchronous == Synchronous::kFull) synchronous = Synchronous::kFull;
  }
  mu_.Unlock();
  std::vector<absl::Status> statuses = runner_(bodies, synchronous);
  mu_.Lock();
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i]->status =
        i < statuses.size()
            ? std::move(statuses[i])
            : absl::InternalError("group commit: the batch gave no status");
    batch[i]->done = true;
  }
  ++batches_;
  writes_ += static_cast<int64_t>(batch.size());
  running_ = false;
}

int64_t GroupCommit::batches() const {
  absl::MutexLock lock(&mu_);
  return batches_;
}

int64_t GroupCommit::writes() const {
  absl::MutexLock lock(&mu_);
  return writes_;
}

int64_t GroupCommit::waiting() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(queue_.size());
}

bool GroupCommit::running() const {
  absl::MutexLock lock(&mu_);
  return running_;
}

}  // namespace tessera::db
