// The trial backends: what runs a trial (Tessera's executor on CPU threads
// or on CUDA GPUs, or the user's own training command), how an agent
// launches it, and what its measurements are good for. Code asks a
// backend's capabilities here rather than comparing its name with "cpu" or
// "cuda"; a new backend is a new row in trial_backend.cc (and its launcher
// and driver).
//
//   TESSERA_ASSIGN_OR_RETURN(const TrialBackend* b, FindTrialBackend("cuda"));
//   if (b->times_comm_apart) sample.comm_s = measured.comm_s;
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tessera {

// How an agent starts a trial of a backend.
enum class TrialLauncher {
  kTesseraTrial,  // tessera-trial processes (agents/trial_command.h)
  kCommand,       // the study's command template (agents/command_launch.h)
};

// What one rank of a backend's trials runs on.
enum class RankDevice {
  kCpuCore,      // a CPU core of the agent's host (its peak is the host's)
  kGpu,          // a GPU
  kHostsDevice,  // whatever the host has: GPUs, else CPU cores
};

// The training stack Tessera's own executor is (costmodel/stacks/tessera.json):
// what its cpu and cuda trials measure.
inline constexpr char kExecutorStack[] = "tessera";

struct TrialBackend {
  std::string name;  // "cpu", "cuda", "command"
  TrialLauncher launcher = TrialLauncher::kTesseraTrial;
  RankDevice ranks_on = RankDevice::kCpuCore;
  // The training stack its trials measure (costmodel/stacks): "tessera" for
  // Tessera's executor; "" for the study's own stack (the user's framework
  // runs it, so its trials calibrate that stack).
  std::string trial_stack = kExecutorStack;
  // Its agents run on whatever the host has (GPUs, else CPU cores) and
  // probe that hardware with the cpu or cuda executor; otherwise the
  // backend is the hardware.
  bool any_device = false;
  // Every trial is one process per rank (NCCL, one per GPU), even on one
  // agent; otherwise one agent's ranks are threads of one process and only
  // a trial across agents runs a process per rank.
  bool process_per_rank = false;
  // The measured compute / communication / exposed-communication split is
  // the cost model's (CUDA events time kernels and collectives apart; the
  // CPU executor's blocking collectives also time a rank's wait for its
  // peers).
  bool times_comm_apart = false;
  // Its trials report their communication time at all (a framework's own
  // step lines do not).
  bool measures_comm = true;
  // Peak memory is device memory as the cost model counts it.
  bool measures_model_memory = false;
  // Trials run on the GPUs a study names (a study's cluster can be its
  // agents); otherwise on whatever the agents are (CPU cores).
  bool runs_on_named_gpu = false;
  // Ranks of one agent talk over the same communicator as ranks of
  // different agents (NCCL): a one-agent collective sweep measures them.
  // Otherwise they talk in process, and the agent's own probes do.
  bool one_agent_sweep = false;
};

// Every backend, in a fixed order.
const std::vector<TrialBackend>& TrialBackends();

// The backend called `name`; INVALID_ARGUMENT "'x' is not cpu, cuda or
// command".
absl::StatusOr<const TrialBackend*> FindTrialBackend(absl::string_view name);

// Whether the backend called `name` is one whose ranks are `device`; false
// for a name that is no backend (what an agent or a report said is checked
// where it arrives).
bool BackendRanksOn(absl::string_view name, RankDevice device);

// Whether the backend called `name` runs the study's own command.
bool RunsCommand(absl::string_view name);

// "cpu, cuda or command": the names for error messages.
std::string TrialBackendNames();

}  // namespace tessera
