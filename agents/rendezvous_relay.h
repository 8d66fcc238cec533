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

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
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

}  // namespace tessera::agents
