#include "cli/service_json.h"

#include <string>

#include "cli/plan_output.h"
#include "cli/service_names.h"
#include "cli/time_text.h"
#include "core/layout_json.h"
#include "proto/convert.h"
#include "proto/spec_json.h"
#include "service/plan_convert.h"

namespace tessera::cli {
namespace {

using nlohmann::json;

// RFC 3339 text, or null when the time is not set.
json TimeJson(int64_t unix_ms) {
  return unix_ms == 0 ? json(nullptr) : json(FormatUnixMs(unix_ms));
}

json FullRunJson(const v1::FullRun& run) {
  return json{{"days", run.days()},
              {"energy_mwh", run.energy_mwh()},
              {"gpu_hours", run.gpu_hours()}};
}

// The figures the message states (a preset's name, optional overrides).
json GpuJson(const v1::GpuSpec& g) {
  json j = json::object();
  if (!g.preset().empty()) j["preset"] = g.preset();
  if (g.has_peak_dense_tflops()) j["peak_dense_tflops"] = g.peak_dense_tflops();
  if (g.has_memory_bytes()) j["memory_bytes"] = g.memory_bytes();
  if (g.has_hbm_gbs()) j["hbm_gbs"] = g.hbm_gbs();
  if (g.has_nvlink_gbs()) j["nvlink_gbs"] = g.nvlink_gbs();
  if (g.has_inter_node_gbs()) j["inter_node_gbs"] = g.inter_node_gbs();
  if (g.has_tdp_w()) j["tdp_w"] = g.tdp_w();
  if (g.has_idle_w()) j["idle_w"] = g.idle_w();
  return j;
}

}  // namespace

json LayoutProtoJson(const v1::Layout& l) {
  if (absl::StatusOr<Layout> layout = LayoutFromProto(l); layout.ok()) {
    return LayoutToJson(*layout);
  }
  // Out of core's range: the message as is.
  return json{{"tp", l.tp()},
              {"sp", l.sp()},
              {"pp", l.pp()},
              {"vpp", l.vpp()},
              {"cp", l.cp()},
              {"dp", l.dp()},
              {"zero", l.zero()},
              {"shard_group", l.shard_group()},
              {"micro_batch", l.micro_batch()},
              {"grad_accum", l.grad_accum()},
              {"recompute", LayoutRecompute(l)}};
}

json StudyJson(const v1::StudySummary& s) {
  return json{
      {"id", s.id()},
      {"name", s.name()},
      {"state", std::string(StudyStateName(s.state()))},
      {"state_reason", s.state_reason()},
      {"owner", s.owner()},
      {"model", s.model()},
      {"gpu", s.gpu()},
      {"nodes", s.nodes()},
      {"gpus_per_node", s.gpus_per_node()},
      {"gpus", s.nodes() * s.gpus_per_node()},
      {"trials_total", s.trials_total()},
      {"trials_done", s.trials_done()},
      {"trials_running", s.trials_running()},
      {"best_layout",
       s.has_best_layout() ? LayoutProtoJson(s.best_layout()) : json(nullptr)},
      {"best_tokens_per_s", s.best_tokens_per_s()},
      {"created", TimeJson(s.created_unix_ms())},
      {"created_unix_ms", s.created_unix_ms()},
      {"updated", TimeJson(s.updated_unix_ms())},
      {"updated_unix_ms", s.updated_unix_ms()}};
}

json TrialMetricsJson(const v1::TrialMetrics& m) {
  return json{
      {"steps", m.steps()},
      {"step_time_median_s", m.step_time_median_s()},
      {"step_time_p10_s", m.step_time_p10_s()},
      {"step_time_p90_s", m.step_time_p90_s()},
      {"tokens_per_s", m.tokens_per_s()},
      {"tokens_per_s_per_gpu", m.tokens_per_s_per_gpu()},
      {"tflops_per_gpu", m.tflops_per_gpu()},
      {"mfu", m.mfu()},
      {"peak_memory_bytes", m.peak_memory_bytes()},
      {"compute_s", m.compute_s()},
      {"comm_s", m.comm_s()},
      {"exposed_comm_s", m.exposed_comm_s()},
      {"watts_per_gpu",
       m.has_watts_per_gpu() ? json(m.watts_per_gpu()) : json(nullptr)},
      {"tokens_per_joule",
       m.has_tokens_per_joule() ? json(m.tokens_per_joule()) : json(nullptr)},
      {"loss", json(std::vector<double>(m.loss().begin(), m.loss().end()))},
      {"device", m.device()},
      {"backend", m.backend()}};
}

json TrialJson(const v1::Trial& t) {
  return json{
      {"id", t.id()},
      {"study_id", t.study_id()},
      {"rung", t.rung()},
      {"state", std::string(TrialStateName(t.state()))},
      {"reason", t.reason()},
      {"layout", LayoutProtoJson(t.layout())},
      {"warmup_steps", t.warmup_steps()},
      {"steps", t.steps()},
      {"gang_size", t.gang_size()},
      {"attempts", t.attempts()},
      {"agents",
       json(std::vector<std::string>(t.agents().begin(), t.agents().end()))},
      {"model", t.model()},
      {"gpu", t.gpu()},
      {"created", TimeJson(t.created_unix_ms())},
      {"started", TimeJson(t.started_unix_ms())},
      {"finished", TimeJson(t.finished_unix_ms())},
      {"created_unix_ms", t.created_unix_ms()},
      {"started_unix_ms", t.started_unix_ms()},
      {"finished_unix_ms", t.finished_unix_ms()},
      {"measured",
       t.has_measured() ? TrialMetricsJson(t.measured()) : json(nullptr)},
      {"predicted", t.has_predicted()
                        ? PredictionJson(PredictionFromProto(t.predicted()))
                        : json(nullptr)},
      // What it ran (ok trials): with layout and measured, a measurement
      // `tessera calibrate` reads.
      {"ran", t.has_ran()
                  ? json::parse(StudySpecToJson(t.ran()), nullptr, false)
                  : json(nullptr)}};
}

json RecommendedLayoutJson(const v1::RecommendedLayout& r) {
  const bool measured = r.provenance() == v1::MEASURED;
  const bool has_energy = r.tokens_per_joule() > 0;
  return json{
      {"layout", LayoutProtoJson(r.layout())},
      {"provenance", std::string(ProvenanceName(r.provenance()))},
      {"trial_id",
       measured && r.trial_id() > 0 ? json(r.trial_id()) : json(nullptr)},
      {"tokens_per_s", r.tokens_per_s()},
      {"tokens_per_joule",
       has_energy ? json(r.tokens_per_joule()) : json(nullptr)},
      {"energy_provenance",
       has_energy ? json(std::string(ProvenanceName(r.energy_provenance())))
                  : json(nullptr)},
      {"mfu", r.mfu()},
      {"memory_gib_per_gpu", r.memory_gib_per_gpu()},
      {"exposed_comm_s", r.exposed_comm_s()},
      {"bubble_s", r.bubble_s()},
      {"step_time_s", r.step_time_s()},
      {"predicted", r.has_predicted()
                        ? PredictionJson(PredictionFromProto(r.predicted()))
                        : json(nullptr)},
      {"full_run",
       r.has_full_run() ? FullRunJson(r.full_run()) : json(nullptr)},
      {"why", r.why()}};
}

json RecommendationJson(const v1::Recommendation& r) {
  json pareto = json::array();
  for (const v1::RecommendedLayout& p : r.pareto()) {
    pareto.push_back(RecommendedLayoutJson(p));
  }
  json calibration = json::object();
  for (const auto& [name, value] : r.calibration()) calibration[name] = value;
  return json{
      {"study_id", r.study_id()},
      {"final", r.final()},
      {"best_throughput", r.has_best_throughput()
                              ? RecommendedLayoutJson(r.best_throughput())
                              : json(nullptr)},
      {"best_energy", r.has_best_energy()
                          ? RecommendedLayoutJson(r.best_energy())
                          : json(nullptr)},
      {"pareto", std::move(pareto)},
      {"calibration", std::move(calibration)},
      {"calibration_mape", r.calibration_mape()},
      {"calibration_samples", r.calibration_samples()},
      {"history_db", r.history_db()},
      {"gpu_name", r.gpu_name()},
      {"gpu", r.has_gpu() ? GpuJson(r.gpu()) : json(nullptr)}};
}

}  // namespace tessera::cli
