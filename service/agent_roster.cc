#include "service/agent_roster.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "core/trial_backend.h"

namespace tessera::service {

bool ServesBackend(const db::Agent& agent, absl::string_view backend) {
  if (!backend.empty()) return agent.info.backend == backend;
  absl::StatusOr<const TrialBackend*> kind =
      FindTrialBackend(agent.info.backend);
  return kind.ok() && (*kind)->launcher == TrialLauncher::kTesseraTrial;
}

absl::Status RequireAgentId(absl::string_view agent_id) {
  if (agent_id.empty()) {
    return absl::InvalidArgumentError("agent_id: required");
  }
  return absl::OkStatus();
}

absl::StatusOr<db::Agent> ActiveAgent(db::TrialStore& store,
                                      absl::string_view agent_id) {
  TESSERA_RETURN_IF_ERROR(RequireAgentId(agent_id));
  TESSERA_ASSIGN_OR_RETURN(db::Agent agent, store.GetAgent(agent_id));
  if (agent.state != db::AgentState::kActive) {
    return absl::FailedPreconditionError(absl::StrCat(
        "agent ", agent_id, " was marked gone (no heartbeat); register again"));
  }
  return agent;
}

absl::StatusOr<std::vector<db::Agent>> SuitableAgents(db::TrialStore& store,
                                                      absl::string_view backend,
                                                      int64_t ranks) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<db::Agent> agents,
                           store.ListAgents(db::AgentState::kActive));
  std::vector<db::Agent> out;
  for (db::Agent& a : agents) {
    if (ServesBackend(a, backend) && a.info.gpu_count >= ranks) {
      out.push_back(std::move(a));
    }
  }
  return out;
}

absl::StatusOr<std::string> AgentShortage(db::TrialStore& store,
                                          absl::string_view backend,
                                          int64_t ranks) {
  TESSERA_ASSIGN_OR_RETURN(const std::vector<db::Agent> agents,
                           store.ListAgents(db::AgentState::kActive));
  std::vector<std::string> seen;
  for (const db::Agent& a : agents) {
    if (ServesBackend(a, backend) && a.info.gpu_count >= ranks) return "";
    if (seen.size() < 4) {
      seen.push_back(absl::StrCat(a.info.id, " (", a.info.backend, ", ",
                                  a.info.gpu_count, " ranks)"));
    }
  }
  if (agents.size() > seen.size()) {
    seen.push_back(absl::StrCat("and ", agents.size() - seen.size(), " more"));
  }
  return absl::StrCat(
      "no registered agent can run its trials: each needs ", ranks, " ranks",
      backend.empty() ? "" : absl::StrCat(" on backend ", backend),
      "; registered: ", agents.empty() ? "none" : absl::StrJoin(seen, ", "),
      ". It waits for one (tessera-agent --backend ",
      backend.empty() ? "cpu|cuda" : std::string(backend), ")");
}

}  // namespace tessera::service
