#include "service/metrics/store_metrics.h"

#include <filesystem>
#include <map>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace tessera::service::metrics {
namespace {

// The file's size; 0 when it does not exist (a WAL checkpointed away).
int64_t FileSizeBytes(const std::string& path) {
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(path, error);
  return error ? 0 : static_cast<int64_t>(size);
}

}  // namespace

absl::StatusOr<std::vector<MetricFamily>> StoreMetrics(
    db::TrialStore& store, const std::string& db_path) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<db::Study> studies,
                           store.ListStudies(db::StudyFilter{}));
  std::map<db::StudyStatus, int64_t> studies_by_status;
  for (db::StudyStatus status :
       {db::StudyStatus::kQueued, db::StudyStatus::kRunning,
        db::StudyStatus::kDone, db::StudyStatus::kCancelled,
        db::StudyStatus::kFailed}) {
    studies_by_status[status] = 0;
  }
  std::map<db::TrialState, int64_t> trials_by_state;
  for (db::TrialState state : db::AllTrialStates()) trials_by_state[state] = 0;
  for (const db::Study& study : studies) {
    ++studies_by_status[study.status];
    TESSERA_ASSIGN_OR_RETURN(auto counts, store.CountTrialsByStatus(study.id));
    for (const auto& [state, count] : counts) trials_by_state[state] += count;
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<db::Agent> agents,
                           store.ListAgents(std::nullopt));
  std::map<db::AgentState, int64_t> agents_by_state = {
      {db::AgentState::kActive, 0}, {db::AgentState::kGone, 0}};
  for (const db::Agent& agent : agents) ++agents_by_state[agent.state];

  std::vector<MetricFamily> families;
  MetricFamily& study_family =
      families.emplace_back(MetricFamily{"tessera_studies",
                                         "Studies in the store by status.",
                                         MetricType::kGauge,
                                         {}});
  for (const auto& [status, count] : studies_by_status) {
    study_family.samples.push_back(
        {"",
         {{"status", std::string(db::StudyStatusName(status))}},
         static_cast<double>(count)});
  }
  MetricFamily& trial_family = families.emplace_back(
      MetricFamily{"tessera_trials",
                   "Trials in the store by state, across all studies.",
                   MetricType::kGauge,
                   {}});
  for (const auto& [state, count] : trials_by_state) {
    trial_family.samples.push_back(
        {"",
         {{"state", std::string(db::TrialStateName(state))}},
         static_cast<double>(count)});
  }
  MetricFamily& agent_family = families.emplace_back(MetricFamily{
      "tessera_agents",
      "Registered agents by state (active: heartbeating; gone: silent past "
      "--agent-timeout-s).",
      MetricType::kGauge,
      {}});
  for (const auto& [state, count] : agents_by_state) {
    agent_family.samples.push_back(
        {"",
         {{"state", std::string(db::AgentStateName(state))}},
         static_cast<double>(count)});
  }
  families.push_back(MetricFamily{
      "tessera_store_size_bytes",
      "The SQLite history's size on disk: the database file plus its "
      "write-ahead log.",
      MetricType::kGauge,
      {{"",
        {},
        static_cast<double>(FileSizeBytes(db_path) +
                            FileSizeBytes(absl::StrCat(db_path, "-wal")))}}});
  return families;
}

}  // namespace tessera::service::metrics
