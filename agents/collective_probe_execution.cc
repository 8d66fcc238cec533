#include "agents/collective_probe_execution.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "agents/files.h"
#include "agents/process_runner.h"
#include "agents/rendezvous_relay.h"
#include "core/file_io.h"
#include "nlohmann/json.hpp"

namespace tessera::agents {
namespace {

std::string ErrorJson(absl::string_view why) {
  return nlohmann::json{{"collectives", nlohmann::json::array()},
                        {"error", std::string(why)}}
      .dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

absl::Status CheckShape(const v1::TrialAssignment& a) {
  const int64_t gang = std::max<int64_t>(a.gang_size(), 1);
  if (a.ranks_per_node() < 1) {
    return absl::InvalidArgumentError(
        "assignment.ranks_per_node: must be at least 1");
  }
  if (a.world_size() != gang * a.ranks_per_node() || a.world_size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "assignment.world_size: ", a.world_size(), " is not gang_size ", gang,
        " x ranks_per_node ", a.ranks_per_node(), " (at least 2)"));
  }
  if (a.node_rank() < 0 || a.node_rank() >= gang) {
    return absl::InvalidArgumentError(absl::StrCat(
        "assignment.node_rank: ", a.node_rank(), " is not in [0, ", gang, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

CollectiveProbeOutcome RunCollectiveProbeAssignment(
    const v1::TrialAssignment& a, const TrialExecutionOptions& o,
    const std::function<bool()>& should_stop) {
  CollectiveProbeOutcome out;
  out.report = a.node_rank() == 0;
  if (absl::Status s = CheckShape(a); !s.ok()) {
    out.result_json = ErrorJson(s.message());
    out.summary = std::string(s.message());
    return out;
  }
  absl::StatusOr<std::string> dir = MakeUniqueDirectory(
      o.work_root, absl::StrCat("probe-", a.collective_probe_id(), "-"));
  if (!dir.ok()) {
    out.result_json =
        ErrorJson(absl::StrCat("agent: ", dir.status().message()));
    out.summary = out.result_json;
    return out;
  }
  out.work_dir = *dir;
  // The hardware's executor, whatever runs the trials (a command agent's
  // collectives are its GPUs' or its host's).
  const std::string backend =
      !o.device_backend.empty()
          ? o.device_backend
          : (a.backend().empty() ? o.default_backend : a.backend());
  const int64_t gang = std::max<int64_t>(a.gang_size(), 1);
  const std::string rendezvous = absl::StrCat(*dir, "/rendezvous");
  std::vector<ProcessSpec> specs;
  std::string rank0_json;
  for (int64_t local = 0; local < a.ranks_per_node(); ++local) {
    const int64_t rank = a.node_rank() * a.ranks_per_node() + local;
    const std::string name = absl::StrCat(*dir, "/rank-", rank);
    ProcessSpec p;
    p.argv = {o.trial_binary,
              "--probe-collectives",
              "--backend",
              backend,
              "--rank",
              absl::StrCat(rank),
              "--ranks",
              absl::StrCat(a.world_size()),
              "--ranks-per-host",
              absl::StrCat(a.ranks_per_node()),
              "--rendezvous-file",
              rendezvous,
              "--json",
              name + ".json"};
    if (a.time_limit_s() > 0) {
      p.argv.insert(p.argv.end(),
                    {"--time-limit-s", absl::StrCat(a.time_limit_s())});
    }
    if (a.probe_max_bytes() > 0) {
      p.argv.insert(p.argv.end(),
                    {"--probe-max-bytes", absl::StrCat(a.probe_max_bytes())});
    }
    if (gang > 1) {
      p.argv.insert(p.argv.end(), {"--bind-host", "0.0.0.0", "--advertise-host",
                                   o.advertise_host});
    }
    p.working_dir = *dir;
    p.stdout_path = name + ".out";
    p.stderr_path = name + ".err";
    if (rank == 0) rank0_json = name + ".json";
    specs.push_back(std::move(p));
  }

  const RunLimits limits = LeaseRunLimits(a.time_limit_s(), o);
  RelayControl control;
  control.deadline = absl::Now() + limits.time_limit;
  control.collective_probe_id = a.collective_probe_id();
  RelayThread relay(gang > 1, a.node_rank() == 0, o.planner, o.agent_id, 0,
                    rendezvous, control);
  absl::StatusOr<std::vector<ProcessOutcome>> ran = RunProcesses(
      specs, limits,
      [&] { return (should_stop && should_stop()) || relay.Failed(); },
      o.registry);
  relay.Join();

  if (should_stop && should_stop()) {
    out.report = false;
    out.summary = "stopped";
    return out;
  }
  if (!ran.ok()) {
    out.result_json =
        ErrorJson(absl::StrCat("agent: ", ran.status().message()));
  } else if (relay.Failed()) {
    out.result_json = ErrorJson(
        absl::StrCat("agent: rendezvous relay: ", relay.status().message()));
  } else if (out.report) {
    absl::StatusOr<std::string> text = ReadFile(rank0_json);
    const nlohmann::json json =
        text.ok() ? nlohmann::json::parse(*text, nullptr, false)
                  : nlohmann::json();
    if (json.is_object()) {
      out.result_json = *text;
      out.ok = !json.contains("error");
    } else {
      out.result_json = ErrorJson(
          absl::StrCat("rank 0 wrote no sweep (", (*ran)[0].exit.Describe(),
                       "): ", ReadFileTail(specs[0].stderr_path, 2000)));
    }
  }
  out.summary = !out.report ? "done (node rank 0 reports)"
                : out.ok    ? "swept"
                            : out.result_json;
  return out;
}

}  // namespace tessera::agents
