// How an agent starts one command trial (backend "command", core/
// trial_backend.h): the study's command template (core/command_template.h)
// expanded with this agent's part of the trial, run as ONE process per agent
// with /bin/sh -c in the folder the agent was started in (so that the
// user's relative paths, `./train.sh`, resolve as in their own shell); its
// stdout, stderr, metrics and config live in the trial's folder
// ({trial_dir}, $TESSERA_TRIAL_DIR). The command launches its own ranks
// (torchrun --nproc_per_node {gpus_per_node}, say) and meets the other agents
// of a gang at the rendezvous the planner relays ({master_addr}:
// {master_port}, published by node rank 0's agent).
//
// The environment adds the torchrun launcher's variables (MASTER_ADDR,
// MASTER_PORT, WORLD_SIZE, NNODES, NODE_RANK, NPROC_PER_NODE; torchrun sets
// RANK and LOCAL_RANK for each worker), TESSERA_METRICS (the JSON Lines file
// of agents/command_metrics.h), TESSERA_TRIAL_DIR and TESSERA_CONFIG (the
// trial's layout and workload as Tessera's JSON). {config} is the layout in
// the stack's own form where costmodel/export has one (a torchtitan Python
// config, Megatron-LM arguments, a DeepSpeed JSON), else that JSON.
//
//   TESSERA_ASSIGN_OR_RETURN(CommandLaunch launch,
//       BuildCommandLaunch(assignment, {"10.0.0.1", 29500}, work_dir));
//   ChildProcess::Start(launch.spec);
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "agents/command_policy.h"
#include "agents/process.h"
#include "proto/assigned_trial.h"
#include "tessera/v1/service.pb.h"

namespace tessera::agents {

// Where the gang meets: node rank 0's host and a port free there.
struct CommandRendezvous {
  std::string master_addr = "127.0.0.1";
  int port = 0;
};

struct CommandLaunch {
  ProcessSpec spec;          // /bin/sh -c <expanded command>
  std::string command_line;  // the expanded command, for the log
  std::string metrics_path;  // $TESSERA_METRICS
  std::string config_path;   // {config}
};

// The value of every placeholder for `assignment` (the layout, workload,
// model, gang and files). INVALID_ARGUMENT naming the field for an
// assignment whose model or layout cannot be read.
absl::StatusOr<std::map<std::string, std::string>> CommandValues(
    const AssignedTrial& trial, const CommandRendezvous& rendezvous,
    const std::string& work_dir);

// The process of `assignment` whose files go to `work_dir` (which exists),
// run in `command_dir` ("": the agent's own working folder), and its config
// file written to `work_dir`. With `run_as`, the process runs as that user
// (HOME, USER and LOGNAME its own) and inherits none of the agent's
// TESSERA_* or GRPC_* variables. INVALID_ARGUMENT naming "assignment.command"
// for a missing or bad template, as CommandValues for the rest.
absl::StatusOr<CommandLaunch> BuildCommandLaunch(
    const AssignedTrial& trial, const CommandRendezvous& rendezvous,
    const std::string& work_dir, const std::string& command_dir = "",
    const std::optional<RunAsUser>& run_as = std::nullopt);

// A TCP port nobody listens on now (the kernel's choice for port 0). Another
// process may take it before the command binds it: the trial then fails
// typed, and is retried by the planner like any failure.
absl::StatusOr<int> FreeTcpPort();

}  // namespace tessera::agents
