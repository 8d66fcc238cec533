// Carries a gang trial's rendezvous file between agents through the planner
// (AgentService.Rendezvous). Global rank 0 runs on the node-rank-0 agent and
// writes "host:port\n" to its local rendezvous file (executor
// comm/internal/tcp_rendezvous.h); that agent waits for the file and
// publishes its content; every other agent of the gang fetches the content
// and writes it to its own local file (temp file + rename), where its
// processes are polling for it.
//
//   RelayControl control{deadline, [&] { return trial_over.load(); }};
//   // node rank 0:
//   TESSERA_RETURN_IF_ERROR(PublishRendezvous(planner, id, trial, file,
//   control));
//   // the others:
//   TESSERA_RETURN_IF_ERROR(FetchRendezvous(planner, id, trial, file,
//   control));
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agents/backoff.h"
#include "agents/planner_client.h"

namespace tessera::agents {

struct RelayControl {
  absl::Time deadline = absl::InfiniteFuture();
  // Polled between steps: true ends the relay with CANCELLED (the trial's
  // processes ended, it was cancelled, the agent stops). May be empty.
  std::function<bool()> should_stop;
  absl::Duration file_poll_interval = absl::Milliseconds(20);
  absl::Duration fetch_wait = absl::Seconds(5);  // per Rendezvous call
  BackoffOptions backoff;                        // between failed calls
  // > 0: relay for this cluster probe (the trial id is then 0).
  int64_t collective_probe_id = 0;
};

// Node rank 0: waits for `file`, then publishes its content. OK once the
// planner has it; CANCELLED, DEADLINE_EXCEEDED, or the planner's refusal
// (FAILED_PRECONDITION / NOT_FOUND: the lease is gone). Unreachable-planner
// errors are retried with backoff until the deadline.
absl::Status PublishRendezvous(PlannerClient& planner,
                               absl::string_view agent_id, int64_t trial_id,
                               const std::string& file,
                               const RelayControl& control);

// Other node ranks: fetches the published content and writes it to `file`
// atomically, asking again while the planner answers "" or
// DEADLINE_EXCEEDED (nothing published within the wait). Same results as
// PublishRendezvous.
absl::Status FetchRendezvous(PlannerClient& planner, absl::string_view agent_id,
                             int64_t trial_id, const std::string& file,
                             const RelayControl& control);

// The relay of one gang lease (a trial's or a cluster probe's) on its own
// thread while the lease's processes run: publishes (`publish`) or fetches
// `file` through `planner` when `relay` is set, does nothing otherwise.
// Join() (also the destructor) tells it the processes ended and waits.
//
//   RelayThread relay(launch.relay_rendezvous, launch.publishes_rendezvous,
//                     planner, agent_id, trial_id, launch.rendezvous_file,
//                     control);
//   ... run the processes, stopping early when relay.Failed() ...
//   relay.Join();
class RelayThread {
 public:
  RelayThread(bool relay, bool publish, PlannerClient* planner,
              std::string agent_id, int64_t trial_id, std::string file,
              RelayControl control);
  ~RelayThread() { Join(); }
  RelayThread(const RelayThread&) = delete;
  RelayThread& operator=(const RelayThread&) = delete;

  // True when the relay failed in a way the processes cannot recover from
  // (they would wait for a rendezvous that never comes).
  bool Failed() const { return failed_.load(); }
  void Join();
  absl::Status status() const;

 private:
  void Finish(absl::Status s);

  std::atomic<bool> processes_done_{false};
  std::atomic<bool> failed_{false};
  mutable absl::Mutex mutex_;
  absl::Status status_ ABSL_GUARDED_BY(mutex_);
  std::thread thread_;
};

}  // namespace tessera::agents
