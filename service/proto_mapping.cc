#include "service/proto_mapping.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "core/status_macros.h"
#include "core/trial_backend.h"
#include "core/units.h"
#include "nlohmann/json.hpp"
#include "proto/convert.h"

namespace tessera::service {
namespace {


struct StatePair {
  db::TrialState db;
  v1::TrialState proto;
};
constexpr StatePair kTrialStates[] = {
    {db::TrialState::kQueued, v1::TRIAL_QUEUED},
    {db::TrialState::kLeased, v1::TRIAL_LEASED},
    {db::TrialState::kOk, v1::TRIAL_OK},
    {db::TrialState::kOom, v1::TRIAL_OOM},
    {db::TrialState::kNan, v1::TRIAL_NAN},
    {db::TrialState::kTimeout, v1::TRIAL_TIMEOUT},
    {db::TrialState::kCrash, v1::TRIAL_CRASH},
    {db::TrialState::kInvalid, v1::TRIAL_INVALID},
    {db::TrialState::kCancelled, v1::TRIAL_CANCELLED},
};

struct StudyPair {
  db::StudyStatus db;
  v1::StudyState proto;
};
constexpr StudyPair kStudyStates[] = {
    {db::StudyStatus::kQueued, v1::STUDY_QUEUED},
    {db::StudyStatus::kRunning, v1::STUDY_RUNNING},
    {db::StudyStatus::kDone, v1::STUDY_DONE},
    {db::StudyStatus::kCancelled, v1::STUDY_CANCELLED},
    {db::StudyStatus::kFailed, v1::STUDY_FAILED},
};

// The loss and step time per step of a stored result (NaN for null).
void AddSteps(const std::string& result_json, v1::TrialMetrics* out) {
  if (result_json.empty()) return;
  const nlohmann::json j = nlohmann::json::parse(result_json, nullptr, false);
  if (!j.is_object()) return;
  if (j.contains("loss") && j["loss"].is_array()) {
    for (const nlohmann::json& v : j["loss"]) {
      out->add_loss(v.is_number() ? v.get<double>() : std::nan(""));
    }
  }
  if (j.contains("step_times_s") && j["step_times_s"].is_array()) {
    for (const nlohmann::json& v : j["step_times_s"]) {
      out->add_step_times_s(v.is_number() ? v.get<double>() : std::nan(""));
    }
  }
}

}  // namespace

db::AgentRegistration AgentRegistrationFromProto(const v1::AgentInfo& agent) {
  db::AgentRegistration r;
  r.id = agent.agent_id();
  r.hostname = agent.hostname();
  r.backend = agent.backend();
  r.gpu_name = agent.gpu_name();
  r.gpu_count = agent.gpu_count();
  r.memory_bytes = agent.memory_bytes();
  r.driver = agent.driver();
  r.interconnect = agent.interconnect();
  r.cpu_ranks = BackendRanksOn(agent.backend(), RankDevice::kCpuCore)
                    ? agent.gpu_count()
                    : 0;
  r.address = agent.address();
  return r;
}

std::vector<db::Probe> ProbesFromProto(const v1::ReportProbesRequest& request) {
  std::vector<db::Probe> probes;
  for (const v1::Probe& p : request.probes()) {
    db::Probe probe;
    probe.kind = p.kind();
    probe.group_size = p.group_size();
    probe.bytes = p.bytes();
    probe.value = p.value();
    probe.unit = p.unit();
    probes.push_back(std::move(probe));
  }
  return probes;
}

int64_t UnixMillis(absl::Time time) { return absl::ToUnixMillis(time); }

v1::TrialState TrialStateToProto(db::TrialState state) {
  for (const StatePair& p : kTrialStates) {
    if (p.db == state) return p.proto;
  }
  return v1::TRIAL_STATE_UNSPECIFIED;
}

absl::StatusOr<db::TrialState> TrialStateFromProto(v1::TrialState state,
                                                   absl::string_view field) {
  for (const StatePair& p : kTrialStates) {
    if (p.proto == state) return p.db;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": not a trial state: ", static_cast<int>(state)));
}

v1::StudyState StudyStateToProto(db::StudyStatus status) {
  for (const StudyPair& p : kStudyStates) {
    if (p.db == status) return p.proto;
  }
  return v1::STUDY_STATE_UNSPECIFIED;
}

absl::StatusOr<db::StudyStatus> StudyStateFromProto(v1::StudyState state,
                                                    absl::string_view field) {
  for (const StudyPair& p : kStudyStates) {
    if (p.proto == state) return p.db;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": not a study state: ", static_cast<int>(state)));
}

v1::Trial TrialToProto(const db::Trial& t) {
  v1::Trial out;
  out.set_id(t.id);
  out.set_study_id(t.study_id);
  *out.mutable_layout() = LayoutToProto(t.layout);
  out.set_rung(t.rung);
  out.set_warmup_steps(t.warmup_steps);
  out.set_steps(t.steps);
  out.set_gang_size(t.gang_size);
  out.set_state(TrialStateToProto(t.status));
  out.set_reason(t.reason);
  if (t.predicted.has_value()) {
    v1::Prediction* p = out.mutable_predicted();
    p->set_tokens_per_s(t.predicted->tokens_per_s);
    p->set_tokens_per_joule(t.predicted->tokens_per_joule);
    p->set_step_time_s(t.predicted->step_time_s);
    p->set_memory_gib_per_gpu(
        static_cast<double>(t.predicted->peak_memory_bytes) / kGiB);
    p->mutable_memory_breakdown()->set_total_bytes(
        static_cast<double>(t.predicted->peak_memory_bytes));
    const int64_t world = t.layout.world_size();
    if (world > 0) {
      p->set_tokens_per_s_per_gpu(t.predicted->tokens_per_s /
                                  static_cast<double>(world));
    }
  }
  if (t.measured.has_value()) {
    const db::TrialMeasurement& m = *t.measured;
    v1::TrialMetrics* x = out.mutable_measured();
    x->set_steps(m.steps);
    x->set_step_time_median_s(m.step_time_s.median);
    x->set_step_time_p10_s(m.step_time_s.p10);
    x->set_step_time_p90_s(m.step_time_s.p90);
    x->set_tokens_per_s(m.tokens_per_s);
    x->set_tokens_per_s_per_gpu(m.tokens_per_s_per_gpu);
    x->set_tflops_per_gpu(m.tflops_per_gpu);
    x->set_mfu(m.mfu);
    x->set_peak_memory_bytes(m.peak_memory_bytes);
    x->set_compute_s(m.compute_s);
    x->set_comm_s(m.comm_s);
    x->set_exposed_comm_s(m.exposed_comm_s);
    if (m.watts_per_gpu.has_value()) x->set_watts_per_gpu(*m.watts_per_gpu);
    if (m.tokens_per_joule.has_value()) {
      x->set_tokens_per_joule(*m.tokens_per_joule);
    }
    x->set_device(m.device);
    x->set_backend(m.backend);
    AddSteps(t.result_json, x);
  }
  for (const std::string& a : t.lease_agent_ids) out.add_agents(a);
  if (t.lease_agent_ids.empty() && !t.reported_by.empty()) {
    out.add_agents(t.reported_by);
  }
  out.set_attempts(t.attempts);
  out.set_created_unix_ms(UnixMillis(t.created_at));
  if (t.started_at.has_value()) {
    out.set_started_unix_ms(UnixMillis(*t.started_at));
  }
  if (t.finished_at.has_value()) {
    out.set_finished_unix_ms(UnixMillis(*t.finished_at));
  }
  out.set_model(t.model);
  out.set_gpu(t.gpu);
  return out;
}

v1::StudySummary StudySummaryOf(const db::Study& s,
                                const std::map<db::TrialState, int64_t>& counts,
                                const std::optional<db::Trial>& best) {
  v1::StudySummary out;
  out.set_id(s.id);
  out.set_name(s.name);
  out.set_state(StudyStateToProto(s.status));
  out.set_state_reason(s.status_reason);
  out.set_owner(s.owner);
  out.set_model(s.model);
  out.set_gpu(s.gpu);
  out.set_nodes(s.nodes);
  out.set_gpus_per_node(s.gpus_per_node);
  int64_t total = 0;
  int64_t done = 0;
  for (const auto& [state, n] : counts) {
    total += n;
    if (db::IsFinal(state) && state != db::TrialState::kCancelled) done += n;
  }
  auto leased = counts.find(db::TrialState::kLeased);
  out.set_trials_total(total);
  out.set_trials_done(done);
  out.set_trials_running(leased == counts.end() ? 0 : leased->second);
  out.set_created_unix_ms(UnixMillis(s.created_at));
  out.set_updated_unix_ms(UnixMillis(s.updated_at));
  if (best.has_value() && best->measured.has_value()) {
    *out.mutable_best_layout() = LayoutToProto(best->layout);
    out.set_best_tokens_per_s(best->measured->tokens_per_s);
  }
  return out;
}

absl::StatusOr<db::TrialFilter> TrialFilterFromRequest(
    const v1::ListTrialsRequest& r) {
  db::TrialFilter f;
  if (r.study_id() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "study_id: must be 0 (every study) or positive, got ", r.study_id()));
  }
  if (r.study_id() > 0) f.study_id = r.study_id();
  for (int i = 0; i < r.states_size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(
        db::TrialState s,
        TrialStateFromProto(r.states(i), absl::StrCat("states[", i, "]")));
    f.statuses.push_back(s);
  }
  f.model = r.model();
  f.gpu = r.gpu();
  if (r.has_tp() && r.tp() > 0) f.layout.tp = r.tp();
  if (r.has_sp()) f.layout.sp = r.sp();
  if (r.has_pp() && r.pp() > 0) f.layout.pp = r.pp();
  if (r.has_vpp() && r.vpp() > 0) f.layout.vpp = r.vpp();
  if (r.has_cp() && r.cp() > 0) f.layout.cp = r.cp();
  if (r.has_dp() && r.dp() > 0) f.layout.dp = r.dp();
  if (r.has_zero()) {
    if (r.zero() < 0 || r.zero() > 3) {
      return absl::InvalidArgumentError(
          absl::StrCat("zero: must be 0, 1, 2 or 3, got ", r.zero()));
    }
    f.layout.zero = r.zero();
  }
  if (r.has_micro_batch() && r.micro_batch() > 0) {
    f.layout.micro_batch = r.micro_batch();
  }
  if (r.has_recompute() && !r.recompute().empty()) {
    absl::StatusOr<Recompute> rc = ParseRecompute(r.recompute());
    if (!rc.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("recompute: ", rc.status().message()));
    }
    f.layout.recompute = *rc;
  }
  if (r.since_unix_ms() > 0) {
    f.created.begin = absl::FromUnixMillis(r.since_unix_ms());
  }
  if (r.until_unix_ms() > 0) {
    f.created.end = absl::FromUnixMillis(r.until_unix_ms());
  }
  absl::string_view sort = r.sort();
  if (absl::ConsumePrefix(&sort, "-")) f.descending = true;
  std::string key(sort);
  if (key.empty()) key = "id";
  if (key == "created") key = "created_at";
  if (key == "finished") key = "finished_at";
  const std::vector<std::string>& keys = db::TrialSortKeys();
  if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sort: '", r.sort(), "' is not one of ", absl::StrJoin(keys, ", "),
        ", created, finished (a leading '-' sorts descending)"));
  }
  f.sort_by = key;
  if (r.limit() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit: must be 0 (1000) or positive, got ", r.limit()));
  }
  f.limit = r.limit() == 0 ? 1000 : r.limit();
  return f;
}

absl::StatusOr<db::StudyFilter> StudyFilterFromRequest(
    const v1::ListStudiesRequest& r) {
  db::StudyFilter f;
  if (r.state() != v1::STUDY_STATE_UNSPECIFIED) {
    TESSERA_ASSIGN_OR_RETURN(db::StudyStatus s,
                             StudyStateFromProto(r.state(), "state"));
    f.statuses.push_back(s);
  }
  f.model = r.model();
  f.gpu = r.gpu();
  if (r.limit() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit: must be 0 (100) or positive, got ", r.limit()));
  }
  f.limit = r.limit() == 0 ? 100 : r.limit();
  return f;
}

}  // namespace tessera::service
