// The tessera-trial command lines of one assignment
// (executor/tessera_trial/tessera_trial_main.cc), in one of two modes:
//
// - threads: a cpu trial on one agent (gang_size 1) is ONE process whose
//   --ranks ranks_per_node ranks are threads;
// - per-rank: a trial spanning agents (gang_size > 1), or any cuda trial
//   (one process per GPU), is ONE PROCESS PER LOCAL RANK: --rank
//   node_rank * ranks_per_node + local, --ranks world_size, a shared
//   --rendezvous-file in the trial's folder and --ranks-per-host
//   ranks_per_node. A gang listens on every interface (--bind-host 0.0.0.0)
//   and advertises the agent's --address; the rendezvous file then travels
//   between agents through the planner (rendezvous_relay.h).
//
// The model spec becomes --model/--layers/..., the layout its canonical text
// (core FormatLayout of proto LayoutFromProto), and the batch, sequence,
// steps, limits and seed their flags. Each process writes its JSON, stdout
// and stderr into the trial's folder.
//
//   TESSERA_ASSIGN_OR_RETURN(TrialLaunch launch,
//                            BuildTrialLaunch(assignment, options));
//   for (const RankProcess& p : launch.processes) ... p.spec.argv ...
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agents/process.h"
#include "proto/assigned_trial.h"
#include "tessera/v1/service.pb.h"

namespace tessera::agents {

struct TrialLaunchOptions {
  std::string trial_binary = "tessera-trial";
  std::string work_dir;                      // the trial's own folder (exists)
  std::string advertise_host = "127.0.0.1";  // this agent's --address
  std::string default_backend = "cpu";       // when the assignment has none
};

// One tessera-trial process.
struct RankProcess {
  int64_t local_rank = 0;    // 0 in threads mode
  int64_t global_rank = -1;  // -1 in threads mode (the process runs them all)
  std::string json_path;
  ProcessSpec spec;  // argv, working folder, stdout and stderr files
};

struct TrialLaunch {
  bool per_rank = false;               // one process per local rank
  std::vector<RankProcess> processes;  // by local rank
  std::string rendezvous_file;         // per-rank mode; "" otherwise
  bool relay_rendezvous = false;       // gang_size > 1: through the planner
  bool publishes_rendezvous = false;   // ... and this agent is node rank 0
};

// The model flags of `model`: --model PRESET and one flag per explicit
// field. INVALID_ARGUMENT naming "model.<field>" for a field tessera-trial
// cannot take (tie_embeddings, rope_theta, norm_eps).
absl::StatusOr<std::vector<std::string>> ModelFlags(const v1::ModelSpec& model);

// The processes of `assignment`. INVALID_ARGUMENT naming the field for an
// assignment that cannot be run as given: "assignment.ranks_per_node",
// "assignment.world_size" (not gang_size * ranks_per_node),
// "assignment.node_rank", "assignment.backend", "layout.<field>",
// "model.<field>".
absl::StatusOr<TrialLaunch> BuildTrialLaunch(const AssignedTrial& trial,
                                             const TrialLaunchOptions& options);

}  // namespace tessera::agents
