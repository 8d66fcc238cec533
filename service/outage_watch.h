// The lease clock stops while the planner cannot serve its agents (issue
// 28): a lease may expire only after its agent had a whole lease timeout of
// a WORKING planner to renew it. OutageWatch notes the two outages a
// running planner can live through and tells the reaper when one is open,
// so that it forgives them (TrialStore::ForgiveOutage: every lease gets
// LeaseGraceAfterOutage (fleet_pace.h) from the planner's return, every agent's silence
// restarts)
// before it expires anything:
//   - the store refusing writes (disk full, read-only, I/O errors): noticed
//     by the lease-side calls that failed (heartbeats, reports, the
//     reaper's own writes), over when a ForgiveOutage write succeeds;
//   - the process not running (SIGSTOP, a suspended VM, starvation):
//     noticed by the reaper thread as a pass later than it asked for by
//     more than the stall allowance.
// The third outage, a restart, is forgiven by Planner::Create.
//
//   OutageWatch watch;
//   if (!status.ok()) watch.StoreFailed(now, status);  // on a failed write
//   if (std::optional<std::string> why = watch.Open()) {
//     if (store->ForgiveOutage(now, now + lease_timeout).ok()) watch.Over(*why);
//   }
#pragma once

#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace tessera::service {

// Whether `status`, from a store write, says the store cannot write now
// (UNAVAILABLE, RESOURCE_EXHAUSTED, INTERNAL, UNKNOWN, DATA_LOSS, ABORTED,
// DEADLINE_EXCEEDED), as opposed to refusing this request.
bool StoreCannotWrite(const absl::Status& status);

class OutageWatch {
 public:
  // A store write failed at `now` with `status`; ignored unless
  // StoreCannotWrite(status).
  void StoreFailed(absl::Time now, const absl::Status& status);
  // The process did not run for `gap` (the reaper's pass came that late).
  void Stalled(absl::Time now, absl::Duration gap);
  // The open outage ("the store refused writes since ...: <why>", "the
  // planner did not run for 20s"), or nullopt.
  std::optional<std::string> Open() const;
  // The outage `seen` (what Open said) was forgiven (its leases renewed):
  // it is over, unless another began meanwhile.
  void Over(const std::string& seen);

 private:
  mutable absl::Mutex mu_;
  std::optional<std::string> open_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera::service
