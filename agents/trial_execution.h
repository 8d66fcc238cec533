// One leased trial, run to a result: the tessera-trial processes of the
// assignment (trial_command.h), or the study's own command for a backend
// that launches one (command_trial.h), in a fresh folder under the agent's
// work folder, the rendezvous relay beside them when the trial spans agents
// (rendezvous_relay.h), the agent's own time limit (process_runner.h), and
// one result out of what the processes wrote (result_assembly.h). An
// assignment that cannot be run as given is an `invalid` result, so the
// planner records it instead of leasing it again.
//
// The agent's limit is a backstop: tessera-trial gets --time-limit-s T and
// writes its own typed timeout at 1.1 T + 5 s at the latest; the agent stops
// the processes at AgentTimeLimit(T) = 1.1 T + 10 s (SIGTERM, SIGKILL after
// the grace), and reports timeout for any that left no result.
//
//   TrialExecutionOptions options;  // binary, folders, planner, registry
//   TrialOutcome outcome = RunTrialAssignment(assignment, options,
//                                             [&] { return cancelled; });
//   if (outcome.end == TrialEnd::kResult) Report(outcome.result_json);
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/time/time.h"
#include "agents/command_policy.h"
#include "agents/planner_client.h"
#include "agents/process.h"
#include "agents/process_runner.h"
#include "proto/assigned_trial.h"
#include "tessera/v1/service.pb.h"

namespace tessera::agents {

struct TrialExecutionOptions {
  std::string agent_id;
  std::string trial_binary = "tessera-trial";
  std::string work_root;                     // each trial gets a folder here
  std::string advertise_host = "127.0.0.1";  // the agent's --address
  std::string default_backend = "cpu";
  // Where command trials run ("": the agent's own working folder).
  std::string command_dir;
  // What command trials may run and as whom (command_policy.h); empty:
  // every command is refused.
  CommandPolicy command_policy;
  // What the agent's collective probes run on ("cpu", "cuda"); "": the
  // assignment's backend.
  std::string device_backend;
  // Used by gang trials for the rendezvous relay; may be null otherwise.
  PlannerClient* planner = nullptr;
  ProcessGroupRegistry* registry = nullptr;  // may be null
  absl::Duration kill_grace = absl::Seconds(5);
  absl::Duration after_failure_grace = absl::Seconds(15);
  // The agent's limit when the assignment gives none.
  absl::Duration default_time_limit = absl::Hours(1);
};

enum class TrialEnd {
  kResult,     // result_json holds the one result to report
  kStopped,    // should_stop() ended it; nothing to report
  kLeaseGone,  // the planner refused the rendezvous: the lease is gone
  kPartDone,   // this agent's part of a command gang ended cleanly; node
               // rank 0's agent reports the trial (its command has the
               // metrics)
  kInfrastructureFailure,  // a process was killed by a signal neither it nor
                           // the agent sent (OutsideKill), or this agent's
                           // command policy refuses the trial's command: the
                           // agent hands the trial back to run again
                           // (elsewhere; summary says why)
};

struct TrialOutcome {
  TrialEnd end = TrialEnd::kResult;
  std::string result_json;
  std::string summary;   // one line for the log ("ok 5120 tokens/s",
                         // "oom: ...", "stopped", "lease gone: ...")
  std::string work_dir;  // the trial's folder ("" when none was made)
  bool ok = false;       // the result's status is ok
  bool crash = false;    // the result's status is crash
};

// The limit the agent enforces for a trial whose tessera-trial limit is
// `time_limit_s` (<= 0: `fallback`).
absl::Duration AgentTimeLimit(double time_limit_s, absl::Duration fallback);

// The limits the agent runs a lease's processes under: AgentTimeLimit of
// the lease's `time_limit_s`, and the options' grace periods.
RunLimits LeaseRunLimits(double time_limit_s,
                         const TrialExecutionOptions& options);

// Runs the assigned trial to its end (`trial`: the lease's assignment as the
// agent converted it, AssignedTrialOf). `should_stop` (may be empty) is
// polled while it runs: the planner cancelled it, or the agent's drain time
// is over.
TrialOutcome RunTrialAssignment(const AssignedTrial& trial,
                                const TrialExecutionOptions& options,
                                const std::function<bool()>& should_stop);

}  // namespace tessera::agents
