// Group commit: concurrent writes share one transaction and one sync to
// disk. While one batch of writes runs, the writes that arrive wait; the
// first of them to find the writer free runs them all as the next batch
// (at most max_batch, in arrival order) through the batch runner, which
// runs each in its own savepoint of one transaction (RunBatchInTransaction,
// sqlite.h) and commits once. Each caller returns only after that commit,
// with its own write's status: an OK still means committed (durable at the
// batch's synchronous level, the strongest any of its writes asked for),
// and a write that failed changed nothing, whatever the others did. One
// writer alone gets a batch of one: the same transaction as without
// batching.
//
//   GroupCommit commits(64, [&](const std::vector<const GroupCommit::Body*>&
//                               bodies, Synchronous sync) {
//     return RunBatchInTransaction(*writer, TransactionMode::kImmediate,
//                                  bodies);  // after setting `sync`
//   });
//   absl::Status s = commits.Run(body, Synchronous::kFull);
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "db/sqlite.h"

namespace tessera::db {

class GroupCommit {
 public:
  using Body = std::function<absl::Status(Database&)>;
  // Runs `bodies` as one transaction at `synchronous`; returns one status
  // per body, in order.
  using BatchRunner = std::function<std::vector<absl::Status>(
      const std::vector<const Body*>& bodies, Synchronous synchronous)>;

  // At most `max_batch` (>= 1) writes per batch.
  GroupCommit(int max_batch, BatchRunner runner);
  GroupCommit(const GroupCommit&) = delete;
  GroupCommit& operator=(const GroupCommit&) = delete;

  // Runs `body` in the next batch; its status once the batch committed.
  // `body` may run more than once (a busy retry of its batch) and must
  // start from scratch each time. Thread-safe.
  absl::Status Run(const Body& body, Synchronous synchronous);

  // Batches run so far and the writes they held (writes / batches is the
  // mean batch size); writes waiting for the next batch; whether a batch is
  // running now.
  int64_t batches() const;
  int64_t writes() const;
  int64_t waiting() const;
  bool running() const;

 private:
  struct Waiter {
    const Body* body = nullptr;
    Synchronous synchronous = Synchronous::kFull;
    absl::Status status;
    bool done = false;
  };
  // Runs the writes at the front of the queue as one batch; called with
  // mu_ held, which it releases while the batch runs.
  void LeadOneBatch() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int max_batch_;
  const BatchRunner runner_;
  mutable absl::Mutex mu_;
  std::deque<Waiter*> queue_ ABSL_GUARDED_BY(mu_);
  bool running_ ABSL_GUARDED_BY(mu_) = false;  // a batch is in progress
  int64_t batches_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t writes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tessera::db
