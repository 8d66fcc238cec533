// Where the ranks of one group meet for a collective. Every rank calls Run
// with the same sequence number (its count of collectives on the group); Run
// waits until every rank has arrived, checks that they all called the same
// collective with the same count, dtype, op and root (INVALID_ARGUMENT on
// every rank otherwise), lets each rank do its share of the data movement,
// and returns once every rank is done with every buffer.
//
//   CollectiveCall call;
//   call.kind = CollectiveKind::kAllReduce;  // and dtype, count, buffers...
//   TESSERA_RETURN_IF_ERROR(rendezvous.Run(rank, seq++, call,
//       [&](absl::Span<const CollectiveCall> calls) { ...; }, stats));
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "executor/comm/comm_stats.h"
#include "executor/comm/communicator.h"
#include "executor/comm/internal/annotated_mutex.h"
#include "executor/comm/internal/call_agreement.h"
#include "executor/comm/internal/world_state.h"
#include "executor/tensor.h"

namespace tessera::executor::comm_internal {

class Group;

// Where Split's work leaves one rank's new group.
struct SplitResult {
  std::shared_ptr<Group> group;
  int rank = -1;
};

// What one rank passed to one collective: what the others must agree on
// (call_agreement.h), and its buffers.
struct CollectiveCall : CallSignature {
  Tensor send;  // Broadcast: the buffer
  Tensor recv;
  int color = 0;  // Split
  int key = 0;
  SplitResult* split_out = nullptr;
};

class Rendezvous {
 public:
  // One rank's share of a collective, given every rank's call (by rank).
  using Work =
      absl::FunctionRef<absl::Status(absl::Span<const CollectiveCall>)>;

  Rendezvous(const WorldState* world, std::string group_name, int size);
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  // Meets the other ranks at collective `seq`, then runs `work` for this
  // rank and waits until every rank's work is done. Errors: INVALID_ARGUMENT
  // (a local error or a mismatch, on every rank), ABORTED (the world
  // aborted before everyone arrived), DEADLINE_EXCEEDED (someone did not
  // arrive within the timeout; the collective is then failed for all), or
  // the first failing rank's work status.
  absl::Status Run(int rank, uint64_t seq, const CollectiveCall& call,
                   Work work, RankNamer name_rank, CommStats& stats);

  // Wakes every waiter (after an abort).
  void WakeAll();

 private:
  struct Slot {
    explicit Slot(int size) : calls(size), work_status(size) {}
    std::condition_variable changed;
    std::vector<std::optional<CollectiveCall>> calls;  // by rank
    std::vector<CollectiveCall> all;  // by rank, once all arrived
    int entered = 0;                  // ranks that reached this slot
    int finished = 0;                 // ranks whose work is done
    int exited = 0;  // ranks that returned; the last one erases the slot
    bool all_arrived = false;
    absl::Status verdict;  // the arguments' check, once all arrived
    absl::Status failure;  // why the collective failed before all arrived
    std::vector<absl::Status> work_status;  // by rank
  };

  // Marks `rank` gone from `slot`, erasing the slot when it was the last.
  void Exit(uint64_t seq, Slot& slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const WorldState* const world_;
  const std::string group_name_;
  const int size_;

  Mutex mu_;
  std::map<uint64_t, std::unique_ptr<Slot>> slots_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::executor::comm_internal
