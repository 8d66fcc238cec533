#include "db/internal/rows.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/layout_json.h"
#include "core/status_macros.h"
#include "nlohmann/json.hpp"

namespace tessera::db::internal {

const char kStudyColumns[] =
    "id, name, spec_json, model, gpu, nodes, gpus_per_node, trial_budget, "
    "time_budget_s, status, status_reason, recommendation_json, "
    "created_at_us, updated_at_us, owner";

// The lease holders come as "rank:agent,rank:agent" (group_concat's order is
// unspecified, so each carries its gang rank).
const char kTrialColumns[] =
    "t.id, t.study_id, "
    "(SELECT st.model FROM studies st WHERE st.id = t.study_id), "
    "(SELECT st.gpu FROM studies st WHERE st.id = t.study_id), t.layout_json, "
    "t.rung, t.steps, t.warmup_steps, "
    "t.gang_size, t.status, t.reason, t.predicted_tokens_per_s, "
    "t.predicted_tokens_per_joule, t.predicted_step_time_s, "
    "t.predicted_peak_memory_bytes, "
    "(SELECT group_concat(l.gang_rank || ':' || l.agent_id, ',') "
    "FROM trial_leases l WHERE l.trial_id = t.id), "
    "t.lease_expires_at_us, t.attempts, t.reported_by, t.result_json, "
    "t.backend, t.device, t.ranks, t.measured_steps, t.step_time_s, "
    "t.step_time_p10_s, t.step_time_p90_s, t.tokens_per_s, "
    "t.tokens_per_s_per_gpu, t.tflops_per_gpu, t.mfu, t.peak_memory_bytes, "
    "t.compute_s, t.comm_s, t.exposed_comm_s, t.watts_per_gpu, "
    "t.tokens_per_joule, t.created_at_us, t.started_at_us, t.finished_at_us, "
    "t.lost_lease_agents";

const char kAgentColumns[] =
    "id, hostname, backend, gpu_name, gpu_count, memory_bytes, driver, "
    "interconnect, cpu_ranks, state, registered_at_us, last_heartbeat_at_us, "
    "address";

const char kProbeColumns[] =
    "id, agent_id, kind, group_size, bytes, value, unit, measured_at_us";

const char kCalibrationColumns[] =
    "id, scope, coefficients_json, samples, fit_error, created_at_us";

namespace {

absl::Status Corrupt(absl::string_view what, absl::string_view detail) {
  return absl::DataLossError(absl::StrCat("stored ", what, ": ", detail));
}

std::optional<absl::Time> OptionalTime(const Statement& row, int column) {
  std::optional<int64_t> us = row.ColumnOptionalInt(column);
  if (!us.has_value()) return std::nullopt;
  return FromMicros(*us);
}

// Parses "rank:agent,rank:agent" into agents in rank order.
absl::StatusOr<std::vector<std::string>> LeaseHolders(absl::string_view text) {
  std::vector<std::pair<int64_t, std::string>> ranked;
  if (text.empty()) return std::vector<std::string>{};
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    std::pair<absl::string_view, absl::string_view> parts =
        absl::StrSplit(item, absl::MaxSplits(':', 1));
    int64_t rank = 0;
    if (!absl::SimpleAtoi(parts.first, &rank)) {
      return Corrupt("trial lease", text);
    }
    ranked.emplace_back(rank, std::string(parts.second));
  }
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::string> agents;
  for (auto& [rank, agent] : ranked) agents.push_back(std::move(agent));
  return agents;
}

// Trial column numbers, in kTrialColumns' order.
enum TrialColumn {
  kId,
  kStudyId,
  kModel,
  kGpu,
  kLayoutJson,
  kRung,
  kSteps,
  kWarmupSteps,
  kGangSize,
  kStatus,
  kReason,
  kPredictedTokensPerS,
  kPredictedTokensPerJoule,
  kPredictedStepTimeS,
  kPredictedPeakMemoryBytes,
  kLeaseHolders,
  kLeaseExpiresAt,
  kAttempts,
  kReportedBy,
  kResultJson,
  kBackend,
  kDevice,
  kRanks,
  kMeasuredSteps,
  kStepTimeS,
  kStepTimeP10S,
  kStepTimeP90S,
  kTokensPerS,
  kTokensPerSPerGpu,
  kTflopsPerGpu,
  kMfu,
  kPeakMemoryBytes,
  kComputeS,
  kCommS,
  kExposedCommS,
  kWattsPerGpu,
  kTokensPerJoule,
  kCreatedAt,
  kStartedAt,
  kFinishedAt,
  kLostLeaseAgents,
};

TrialMeasurement ReadMeasurement(const Statement& row) {
  TrialMeasurement m;
  m.backend = row.ColumnText(kBackend);
  m.device = row.ColumnText(kDevice);
  m.ranks = row.ColumnInt(kRanks);
  m.steps = row.ColumnInt(kMeasuredSteps);
  m.step_time_s = {row.ColumnDouble(kStepTimeS),
                   row.ColumnDouble(kStepTimeP10S),
                   row.ColumnDouble(kStepTimeP90S)};
  m.tokens_per_s = row.ColumnDouble(kTokensPerS);
  m.tokens_per_s_per_gpu = row.ColumnDouble(kTokensPerSPerGpu);
  m.tflops_per_gpu = row.ColumnDouble(kTflopsPerGpu);
  m.mfu = row.ColumnDouble(kMfu);
  m.peak_memory_bytes = row.ColumnInt(kPeakMemoryBytes);
  m.compute_s = row.ColumnDouble(kComputeS);
  m.comm_s = row.ColumnDouble(kCommS);
  m.exposed_comm_s = row.ColumnDouble(kExposedCommS);
  m.watts_per_gpu = row.ColumnOptionalDouble(kWattsPerGpu);
  m.tokens_per_joule = row.ColumnOptionalDouble(kTokensPerJoule);
  return m;
}

}  // namespace

absl::StatusOr<Study> ReadStudy(const Statement& row) {
  Study s;
  s.id = row.ColumnInt(0);
  s.name = row.ColumnText(1);
  s.spec_json = row.ColumnText(2);
  s.model = row.ColumnText(3);
  s.gpu = row.ColumnText(4);
  s.nodes = row.ColumnInt(5);
  s.gpus_per_node = row.ColumnInt(6);
  s.trial_budget = row.ColumnInt(7);
  s.time_budget_s = row.ColumnDouble(8);
  absl::StatusOr<StudyStatus> status = ParseStudyStatus(row.ColumnText(9));
  if (!status.ok()) return Corrupt("study", status.status().message());
  s.status = *status;
  s.status_reason = row.ColumnText(10);
  s.recommendation_json = row.ColumnText(11);
  s.created_at = FromMicros(row.ColumnInt(12));
  s.updated_at = FromMicros(row.ColumnInt(13));
  s.owner = row.ColumnText(14);
  return s;
}

absl::StatusOr<Trial> ReadTrial(const Statement& row) {
  Trial t;
  t.id = row.ColumnInt(kId);
  t.study_id = row.ColumnInt(kStudyId);
  t.model = row.ColumnText(kModel);
  t.gpu = row.ColumnText(kGpu);
  const nlohmann::json layout =
      nlohmann::json::parse(row.ColumnText(kLayoutJson), nullptr, false);
  absl::StatusOr<Layout> parsed = LayoutFromJson(layout);
  if (!parsed.ok()) {
    return Corrupt(absl::StrCat("trial ", t.id), parsed.status().message());
  }
  t.layout = *parsed;
  t.rung = row.ColumnInt(kRung);
  t.steps = row.ColumnInt(kSteps);
  t.warmup_steps = row.ColumnInt(kWarmupSteps);
  t.gang_size = row.ColumnInt(kGangSize);
  absl::StatusOr<TrialState> status = ParseTrialState(row.ColumnText(kStatus));
  if (!status.ok()) {
    return Corrupt(absl::StrCat("trial ", t.id), status.status().message());
  }
  t.status = *status;
  t.reason = row.ColumnText(kReason);
  if (!row.ColumnIsNull(kPredictedTokensPerS)) {
    t.predicted = TrialPrediction{row.ColumnDouble(kPredictedTokensPerS),
                                  row.ColumnDouble(kPredictedTokensPerJoule),
                                  row.ColumnDouble(kPredictedStepTimeS),
                                  row.ColumnInt(kPredictedPeakMemoryBytes)};
  }
  TESSERA_ASSIGN_OR_RETURN(t.lease_agent_ids,
                           LeaseHolders(row.ColumnText(kLeaseHolders)));
  t.lease_expires_at = OptionalTime(row, kLeaseExpiresAt);
  t.attempts = row.ColumnInt(kAttempts);
  t.reported_by = row.ColumnText(kReportedBy);
  t.result_json = row.ColumnText(kResultJson);
  if (!row.ColumnIsNull(kResultJson)) t.measured = ReadMeasurement(row);
  t.created_at = FromMicros(row.ColumnInt(kCreatedAt));
  t.started_at = OptionalTime(row, kStartedAt);
  t.finished_at = OptionalTime(row, kFinishedAt);
  const std::string lost = row.ColumnText(kLostLeaseAgents);
  if (!lost.empty()) t.lost_lease_agent_ids = absl::StrSplit(lost, ',');
  return t;
}

absl::StatusOr<Agent> ReadAgent(const Statement& row) {
  Agent a;
  a.info.id = row.ColumnText(0);
  a.info.hostname = row.ColumnText(1);
  a.info.backend = row.ColumnText(2);
  a.info.gpu_name = row.ColumnText(3);
  a.info.gpu_count = row.ColumnInt(4);
  a.info.memory_bytes = row.ColumnInt(5);
  a.info.driver = row.ColumnText(6);
  a.info.interconnect = row.ColumnText(7);
  a.info.cpu_ranks = row.ColumnInt(8);
  absl::StatusOr<AgentState> state = ParseAgentState(row.ColumnText(9));
  if (!state.ok()) return Corrupt("agent", state.status().message());
  a.state = *state;
  a.registered_at = FromMicros(row.ColumnInt(10));
  a.last_heartbeat_at = FromMicros(row.ColumnInt(11));
  a.info.address = row.ColumnText(12);
  return a;
}

Probe ReadProbe(const Statement& row) {
  Probe p;
  p.id = row.ColumnInt(0);
  p.agent_id = row.ColumnText(1);
  p.kind = row.ColumnText(2);
  p.group_size = row.ColumnInt(3);
  p.bytes = row.ColumnInt(4);
  p.value = row.ColumnDouble(5);
  p.unit = row.ColumnText(6);
  p.measured_at = FromMicros(row.ColumnInt(7));
  return p;
}

CollectiveSample ReadCollectiveSample(const Statement& row) {
  CollectiveSample s;
  s.id = row.ColumnInt(0);
  s.cluster = row.ColumnText(1);
  s.collective = row.ColumnText(2);
  s.nodes = row.ColumnInt(3);
  s.gpus_per_node = row.ColumnInt(4);
  s.bytes = row.ColumnInt(5);
  s.busbw_gbs = row.ColumnDouble(6);
  s.agent_ids = row.ColumnText(7);
  s.measured_at = FromMicros(row.ColumnInt(8));
  return s;
}

absl::StatusOr<Calibration> ReadCalibration(const Statement& row) {
  Calibration c;
  c.id = row.ColumnInt(0);
  c.scope = row.ColumnText(1);
  const nlohmann::json coefficients =
      nlohmann::json::parse(row.ColumnText(2), nullptr, false);
  if (!coefficients.is_object()) {
    return Corrupt(absl::StrCat("calibration ", c.id),
                   "coefficients are not a JSON object");
  }
  for (const auto& [name, value] : coefficients.items()) {
    if (!value.is_number()) {
      return Corrupt(absl::StrCat("calibration ", c.id),
                     absl::StrCat("coefficient ", name, " is not a number"));
    }
    c.coefficients[name] = value.get<double>();
  }
  c.samples = row.ColumnInt(3);
  c.fit_error = row.ColumnDouble(4);
  c.created_at = FromMicros(row.ColumnInt(5));
  return c;
}

absl::StatusOr<Study> LoadStudy(Database& db, int64_t study_id) {
  TESSERA_ASSIGN_OR_RETURN(
      Statement select, db.Prepare(absl::StrCat("SELECT ", kStudyColumns,
                                                " FROM studies WHERE id = ?")));
  select.BindInt(1, study_id);
  TESSERA_ASSIGN_OR_RETURN(const bool row, select.Step());
  if (!row) {
    return absl::NotFoundError(absl::StrCat("study ", study_id, ": not found"));
  }
  return ReadStudy(select);
}

absl::StatusOr<Trial> LoadTrial(Database& db, int64_t trial_id) {
  TESSERA_ASSIGN_OR_RETURN(
      Statement select,
      db.Prepare(absl::StrCat("SELECT ", kTrialColumns,
                              " FROM trials t WHERE t.id = ?")));
  select.BindInt(1, trial_id);
  TESSERA_ASSIGN_OR_RETURN(const bool row, select.Step());
  if (!row) {
    return absl::NotFoundError(absl::StrCat("trial ", trial_id, ": not found"));
  }
  return ReadTrial(select);
}

absl::StatusOr<Agent> LoadAgent(Database& db, absl::string_view agent_id) {
  TESSERA_ASSIGN_OR_RETURN(
      Statement select, db.Prepare(absl::StrCat("SELECT ", kAgentColumns,
                                                " FROM agents WHERE id = ?")));
  select.BindText(1, agent_id);
  TESSERA_ASSIGN_OR_RETURN(const bool row, select.Step());
  if (!row) {
    return absl::NotFoundError(
        absl::StrCat("agent ", agent_id, ": not registered"));
  }
  return ReadAgent(select);
}

}  // namespace tessera::db::internal
