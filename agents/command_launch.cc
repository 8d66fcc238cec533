#include "agents/command_launch.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "core/command_template.h"
#include "core/file_io.h"
#include "core/layout.h"
#include "core/layout_json.h"
#include "core/model.h"
#include "core/status_macros.h"
#include "core/workload.h"
#include "nlohmann/json.hpp"
#include "proto/convert.h"

namespace tessera::agents {
namespace {

absl::Status FieldError(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

// The assignment's layout resolved for its world and global batch.
absl::StatusOr<Layout> ResolvedLayout(const AssignedTrial& t) {
  if (!t.resolved_layout.ok()) {
    return FieldError("assignment.layout",
                      t.resolved_layout.status().message());
  }
  return t.resolved_layout;
}

std::string TesseraConfigPath(const std::string& work_dir) {
  return absl::StrCat(work_dir, "/tessera_config.json");
}

// {config}: the stack's own configuration file where the planner rendered
// one (service/framework_config.h), else Tessera's JSON.
std::string ConfigPath(const v1::TrialAssignment& a,
                       const std::string& work_dir) {
  if (a.framework_config_file().empty()) return TesseraConfigPath(work_dir);
  return absl::StrCat(work_dir, "/", a.framework_config_file());
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> CommandValues(
    const AssignedTrial& t, const CommandRendezvous& rdzv,
    const std::string& work_dir) {
  const v1::TrialAssignment& a = t.wire;
  const absl::StatusOr<ModelConfig>& model = t.model;
  if (!model.ok())
    return FieldError("assignment.model", model.status().message());
  TESSERA_ASSIGN_OR_RETURN(const Layout l, ResolvedLayout(t));
  const int64_t nodes = a.gang_size() == 0 ? 1 : a.gang_size();
  auto str = [](int64_t v) { return absl::StrCat(v); };
  return std::map<std::string, std::string>{
      {"nodes", str(nodes)},
      {"gpus_per_node", str(a.ranks_per_node())},
      {"world_size", str(a.world_size())},
      {"node_rank", str(a.node_rank())},
      {"master_addr", rdzv.master_addr},
      {"master_port", str(rdzv.port)},
      {"rendezvous", absl::StrCat(rdzv.master_addr, ":", rdzv.port)},
      {"tp", str(l.tp)},
      {"sp", l.sp ? "1" : "0"},
      {"pp", str(l.pp)},
      {"vpp", str(l.vpp)},
      {"cp", str(l.cp)},
      {"dp", str(l.dp)},
      {"zero", str(l.zero)},
      {"shard_group", str(l.shard_group)},
      {"micro_batch", str(l.micro_batch)},
      {"grad_accum", str(l.grad_accum)},
      {"recompute", std::string(RecomputeName(l.recompute))},
      {"global_batch", str(a.global_batch())},
      {"seq_len", str(a.seq_len())},
      {"precision", a.precision().empty() ? "bf16" : a.precision()},
      {"stack", a.stack()},
      {"model", a.model().preset().empty() ? "custom" : a.model().preset()},
      {"layers", str(model->layers)},
      {"hidden", str(model->hidden)},
      {"heads", str(model->heads)},
      {"kv_heads", str(model->kv_heads)},
      {"ffn_hidden", str(model->ffn_hidden)},
      {"vocab", str(model->vocab)},
      {"warmup_steps", str(a.warmup_steps())},
      {"steps", str(a.steps())},
      {"total_steps", str(a.warmup_steps() + a.steps())},
      {"seed", str(static_cast<int64_t>(a.seed()))},
      {"memory_limit_bytes", str(a.memory_limit_bytes())},
      {"time_limit_s", absl::StrCat(a.time_limit_s())},
      {"trial_id", str(a.trial_id())},
      {"trial_dir", work_dir},
      {"metrics", absl::StrCat(work_dir, "/metrics.jsonl")},
      {"config", ConfigPath(a, work_dir)},
  };
}

absl::StatusOr<CommandLaunch> BuildCommandLaunch(
    const AssignedTrial& t, const CommandRendezvous& rdzv,
    const std::string& work_dir, const std::string& command_dir,
    const std::optional<RunAsUser>& run_as) {
  const v1::TrialAssignment& a = t.wire;
  TESSERA_ASSIGN_OR_RETURN(const auto values, CommandValues(t, rdzv, work_dir));
  absl::StatusOr<std::string> line = ExpandCommandTemplate(a.command(), values);
  if (!line.ok())
    return FieldError("assignment.command", line.status().message());
  TESSERA_ASSIGN_OR_RETURN(const Layout layout, ResolvedLayout(t));

  CommandLaunch launch;
  launch.command_line = *line;
  launch.metrics_path = values.at("metrics");
  launch.config_path = values.at("config");
  // {config} is the stack's own configuration where the planner rendered
  // one, written only when the command reads it; a layout that format cannot
  // say is not run.
  absl::StatusOr<std::vector<std::string>> used =
      CommandTemplatePlaceholders(a.command());
  if (!a.framework_config_file().empty() && used.ok() &&
      std::find(used->begin(), used->end(), "config") != used->end()) {
    if (!a.framework_config_error().empty()) {
      return absl::InvalidArgumentError(a.framework_config_error());
    }
    TESSERA_RETURN_IF_ERROR(
        WriteFileAtomically(launch.config_path, a.framework_config()));
  }
  // $TESSERA_CONFIG: the layout and workload in Tessera's JSON, always.
  nlohmann::json config = {{"layout", LayoutToJson(layout)},
                           {"stack", a.stack()},
                           {"precision", values.at("precision")},
                           {"global_batch", a.global_batch()},
                           {"seq_len", a.seq_len()},
                           {"warmup_steps", a.warmup_steps()},
                           {"steps", a.steps()},
                           {"seed", a.seed()},
                           {"memory_limit_bytes", a.memory_limit_bytes()},
                           {"nodes", values.at("nodes")},
                           {"gpus_per_node", a.ranks_per_node()},
                           {"node_rank", a.node_rank()},
                           {"master_addr", rdzv.master_addr},
                           {"master_port", rdzv.port},
                           {"model",
                            {{"layers", values.at("layers")},
                             {"hidden", values.at("hidden")},
                             {"heads", values.at("heads")},
                             {"kv_heads", values.at("kv_heads")},
                             {"ffn_hidden", values.at("ffn_hidden")},
                             {"vocab", values.at("vocab")}}}};
  TESSERA_RETURN_IF_ERROR(
      WriteFileAtomically(TesseraConfigPath(work_dir), config.dump(2) + "\n"));

  ProcessSpec& spec = launch.spec;
  spec.argv = {"/bin/sh", "-c", *line};
  spec.working_dir = command_dir;
  spec.stdout_path = absl::StrCat(work_dir, "/command.out");
  spec.stderr_path = absl::StrCat(work_dir, "/command.err");
  spec.env = {
      absl::StrCat("MASTER_ADDR=", rdzv.master_addr),
      absl::StrCat("MASTER_PORT=", rdzv.port),
      absl::StrCat("WORLD_SIZE=", a.world_size()),
      absl::StrCat("NNODES=", values.at("nodes")),
      absl::StrCat("NODE_RANK=", a.node_rank()),
      absl::StrCat("NPROC_PER_NODE=", a.ranks_per_node()),
      absl::StrCat("TESSERA_METRICS=", launch.metrics_path),
      absl::StrCat("TESSERA_CONFIG=", TesseraConfigPath(work_dir)),
      absl::StrCat("TESSERA_TRIAL_DIR=", work_dir),
  };
  if (run_as.has_value()) {
    spec.run_as = ProcessSpec::Account{run_as->uid, run_as->gid};
    spec.drop_env_prefixes = {"TESSERA_", "GRPC_"};
    // Its own home where it has one (nobody's /nonexistent is not).
    const bool home = !run_as->home.empty() && ::access(run_as->home.c_str(), F_OK) == 0;
    spec.env.push_back(
        absl::StrCat("HOME=", home ? run_as->home : work_dir));
    spec.env.push_back(absl::StrCat("USER=", run_as->name));
    spec.env.push_back(absl::StrCat("LOGNAME=", run_as->name));
  }
  return launch;
}

absl::StatusOr<int> FreeTcpPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("socket: ", std::strerror(errno)));
  }
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("no free TCP port: ", why));
  }
  ::close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

}  // namespace tessera::agents
