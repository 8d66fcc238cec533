#include "service/recommendation.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/trial_backend.h"
#include "core/units.h"
#include "google/protobuf/util/json_util.h"
#include "costmodel/search/pareto.h"
#include "service/halving.h"
#include "service/measured_layouts.h"
#include "service/measurement_noise.h"
#include "service/plan_convert.h"
#include "service/recalibration.h"
#include "service/study_spec.h"
#include "service/trial_geometry.h"
#include "proto/convert.h"

namespace tessera::service {
namespace {


struct Candidate {
  costmodel::LayoutEvaluation study;  // calibrated, the study's world
  const MeasuredLayout* measured = nullptr;
};

// The study-world candidates: the ranking, its Pareto front and best-energy
// layout, and every measured layout, each once (by study layout).
std::vector<Candidate> Candidates(
    const RecommendationInput& in,
    const std::map<std::string, MeasuredLayout>& measured) {
  const Workload& w = *in.workload;
  // Study layout key -> measured layout, for candidates without a plan.
  std::map<std::string, const MeasuredLayout*> by_study_key;
  for (const auto& [key, m] : measured) {
    absl::StatusOr<Layout> study = StudyLayoutOfTrial(w, m.trial.layout);
    if (study.ok()) by_study_key.emplace(LayoutKey(*study), &m);
  }
  std::vector<Candidate> out;
  std::map<std::string, size_t> index;
  auto add = [&](const costmodel::LayoutEvaluation& e, const MeasuredLayout* m) {
    const std::string key = LayoutKey(e.layout);
    if (index.count(key) > 0) return;
    if (m == nullptr) {
      auto it = by_study_key.find(key);
      if (it != by_study_key.end()) m = it->second;
    }
    index.emplace(key, out.size());
    out.push_back(Candidate{e, m});
  };
  for (const PoolEntry& e : in.pool->entries) {
    const MeasuredLayout* m = nullptr;
    if (e.plan) {
      auto it = measured.find(e.key);
      if (it != measured.end()) m = &it->second;
    }
    add(e.study, m);
  }
  for (const costmodel::LayoutEvaluation& e : in.pool->search.pareto)
    add(e, nullptr);
  if (in.pool->search.feasible > 0) {
    add(in.pool->search.best_energy, nullptr);
    add(in.pool->search.best_throughput, nullptr);
  }
  for (const auto& [key, m] : by_study_key) {
    absl::StatusOr<Layout> study = StudyLayoutOfTrial(w, m->trial.layout);
    add(costmodel::PredictLayout(w, *study, *in.calibration), m);
  }
  return out;
}

std::string Percent(double part, double whole) {
  return whole > 0 ? absl::StrFormat("%.0f%%", 100 * part / whole) : "0%";
}

v1::RecommendedLayout Recommend(const RecommendationInput& in,
                                const Candidate& c) {
  const Workload& w = *in.workload;
  const costmodel::Prediction& p = c.study.prediction;
  const double world = static_cast<double>(w.cluster.world_size());
  const double tokens_per_step =
      static_cast<double>(w.training.tokens_per_step());
  v1::RecommendedLayout r;
  *r.mutable_layout() = LayoutToProto(c.study.layout);
  *r.mutable_predicted() = PredictionToProto(p);
  std::vector<std::string> why;
  double tokens_per_s = p.tokens_per_s;
  double exposed_comm_s = p.exposed_comm_s;
  bool exposed_measured = false;
  bool scaled = false;
  double scale = 1;
  if (c.measured != nullptr) {
    const db::Trial& t = c.measured->trial;
    absl::StatusOr<TrialPlan> plan = PlanOfTrialLayout(w, t.layout, in.layers);
    if (plan.ok() && plan->scaled()) {
      const costmodel::LayoutEvaluation trial =
          costmodel::PredictLayout(plan->workload, plan->layout, *in.calibration);
      if (trial.prediction.tokens_per_s > 0 && p.tokens_per_s > 0) {
        scale = p.tokens_per_s / trial.prediction.tokens_per_s;
      }
      scaled = true;
    }
    // Every ok trial of the layout together (measured_layouts.h), over the
    // trial's world.
    tokens_per_s = c.measured->tokens_per_s_per_gpu *
                   static_cast<double>(t.layout.world_size()) * scale;
    absl::StatusOr<const TrialBackend*> backend =
        FindTrialBackend(t.measured->backend);
    if (!scaled && backend.ok() && (*backend)->measures_comm) {
      exposed_comm_s = t.measured->exposed_comm_s;
      exposed_measured = true;
    }
    r.set_provenance(v1::MEASURED);
    r.set_trial_id(t.id);
    if (c.measured->trials > 1) {
      why.push_back(absl::StrCat(
          "tokens/s measured by ", c.measured->trials, " trials (",
          c.measured->steps, " steps; the longest: trial ", t.id, ", rung ",
          t.rung, ")"));
    } else {
      why.push_back(absl::StrCat("tokens/s measured by trial ", t.id,
                                 " (rung ", t.rung, ", ", t.measured->steps,
                                 " steps)"));
    }
    if (scaled) {
      why.push_back(absl::StrFormat(
          "%s; scaled x%.3g to the study's %d GPUs by the calibrated model",
          plan->note, scale, w.cluster.world_size()));
    }
  } else {
    r.set_provenance(v1::PREDICTED);
    why.push_back("tokens/s predicted by the calibrated model (not trialed)");
  }
  r.set_tokens_per_s(tokens_per_s);
  const double step_time_s =
      tokens_per_s > 0 ? tokens_per_step / tokens_per_s : p.step_time_s;
  r.set_step_time_s(step_time_s);
  // MFU: the trial's own where it ran at the study's scale (so that the
  // recommendation and the trial table print one number), else the
  // prediction's at the measured (or predicted) tokens/s.
  const bool trial_mfu =
      c.measured != nullptr && !scaled && c.measured->trial.measured->mfu > 0;
  r.set_mfu(trial_mfu            ? c.measured->trial.measured->mfu
            : p.tokens_per_s > 0 ? p.mfu * tokens_per_s / p.tokens_per_s
                                 : 0);
  r.set_exposed_comm_s(exposed_comm_s);
  r.set_bubble_s(p.bubble_s);
  // Memory: the trial's measured peak when it ran at the study's scale.
  double memory_gib = p.memory_gib_per_gpu;
  bool memory_measured = false;
  if (c.measured != nullptr && !scaled &&
      c.measured->trial.measured->peak_memory_bytes > 0) {
    memory_gib =
        static_cast<double>(c.measured->trial.measured->peak_memory_bytes) /
        kGiB;
    memory_measured = true;
  }
  r.set_memory_gib_per_gpu(memory_gib);

  // Energy: measured power where the trial had it.
  double tokens_per_joule = 0;
  const db::TrialMeasurement* m =
      c.measured != nullptr ? &*c.measured->trial.measured : nullptr;
  if (m != nullptr && m->tokens_per_joule.has_value() &&
      m->watts_per_gpu.has_value() && *m->watts_per_gpu > 0) {
    tokens_per_joule = scaled ? tokens_per_s / (*m->watts_per_gpu * world)
                              : *m->tokens_per_joule;
    r.set_energy_provenance(v1::MEASURED);
  } else {
    if (p.watts_per_gpu > 0) {
      tokens_per_joule = tokens_per_s / (p.watts_per_gpu * world);
    }
    r.set_energy_provenance(v1::PREDICTED);
    if (c.measured != nullptr) {
      why.push_back("tokens/J predicted (the trial did not measure power)");
    }
  }
  r.set_tokens_per_joule(tokens_per_joule);

  // What dominates the step, from the same figures the fields above report
  // (measured exposed communication where a trial at the study's scale ran;
  // the bubble and memory are the model's).
  why.push_back(absl::StrCat(
      "exposed communication ", Percent(exposed_comm_s, step_time_s),
      " of the step (", exposed_measured ? "measured" : "predicted",
      "); pipeline bubble ", Percent(p.bubble_s, p.step_time_s), " (predicted)",
      absl::StrFormat("; memory %.3g of %.3g GiB per GPU (%s headroom, %s)",
                      memory_gib,
                      static_cast<double>(w.cluster.gpu.memory_bytes) / kGiB,
                      Percent(static_cast<double>(w.cluster.gpu.memory_bytes) -
                                  memory_gib * kGiB,
                              static_cast<double>(w.cluster.gpu.memory_bytes)),
                      memory_measured ? "measured" : "predicted")));
  r.set_why(absl::StrJoin(why, "; "));

  // days, GPU-hours and MWh for the token budget (1 MWh = 3.6e9 J).
  const double total = w.training.total_tokens;
  if (total > 0 && tokens_per_s > 0) {
    v1::FullRun* f = r.mutable_full_run();
    const double seconds = total / tokens_per_s;
    f->set_days(seconds / 86400);
    f->set_gpu_hours(seconds / 3600 * world);
    f->set_energy_mwh(tokens_per_joule > 0 ? total / tokens_per_joule / 3.6e9
                                           : 0);
  }
  return r;
}

}  // namespace

v1::Recommendation BuildRecommendation(const RecommendationInput& in) {
  v1::Recommendation out;
  out.set_study_id(in.study_id);
  out.set_final(in.final);
  for (const auto& [name, value] : CalibrationToMap(*in.calibration)) {
    (*out.mutable_calibration())[name] = value;
  }
  out.set_calibration_mape(in.calibration_mape);
  out.set_calibration_samples(in.calibration_samples);
  out.set_history_db(in.history_db);
  *out.mutable_gpu() = GpuSpecToProto(in.workload->cluster.gpu);

  const std::map<std::string, MeasuredLayout> measured =
      MeasuredLayouts(*in.trials);
  std::vector<v1::RecommendedLayout> all;
  for (const Candidate& c : Candidates(in, measured)) {
    if (!c.study.feasible) continue;
    all.push_back(Recommend(in, c));
  }
  if (all.empty()) return out;
  // The best are chosen among the measured layouts when there are any: an
  // untrialed layout the model ranks higher stays on the front, labelled.
  bool any_measured = false;
  for (const v1::RecommendedLayout& r : all) {
    any_measured = any_measured || r.provenance() == v1::MEASURED;
  }
  auto eligible = [&](const v1::RecommendedLayout& r) {
    return !any_measured || r.provenance() == v1::MEASURED;
  };
  std::optional<size_t> best_throughput;
  std::optional<size_t> best_energy;
  costmodel::ParetoFront front;
  for (size_t i = 0; i < all.size(); ++i) {
    if (eligible(all[i])) {
      if (!best_throughput.has_value() ||
          all[i].tokens_per_s() > all[*best_throughput].tokens_per_s()) {
        best_throughput = i;
      }
      if (!best_energy.has_value() ||
          all[i].tokens_per_joule() > all[*best_energy].tokens_per_joule()) {
        best_energy = i;
      }
    }
    front.Offer(all[i].tokens_per_s(), all[i].tokens_per_joule(),
                static_cast<int64_t>(i));
  }
  int64_t faster = 0;
  double fastest = 0;
  for (const v1::RecommendedLayout& r : all) {
    if (r.tokens_per_s() > all[*best_throughput].tokens_per_s()) {
      ++faster;
      fastest = std::max(fastest, r.tokens_per_s());
    }
  }
  if (faster > 0) {
    v1::RecommendedLayout& b = all[*best_throughput];
    b.set_why(absl::StrFormat(
        "%s; the calibrated model predicts %d untrialed layout%s faster (up "
        "to %.0f%%), not verified by a trial",
        b.why(), faster, faster == 1 ? "" : "s",
        100 * (fastest / b.tokens_per_s() - 1)));
  }
  // How sure the measured best is.
  const NoiseEstimate noise = EstimateNoise(*in.trials);
  out.set_noise_log_sd(noise.log_sd);
  out.set_noise_source(noise.source);
  const std::vector<const MeasuredLayout*> ranked = RankMeasured(measured);
  if (const std::optional<Lead> lead = LeadOf(ranked, noise)) {
    out.set_lead_log(lead->log_lead);
    out.set_lead_log_sd(lead->log_sd);
    absl::StatusOr<Layout> runner_up =
        StudyLayoutOfTrial(*in.workload, ranked[1]->trial.layout);
    *out.mutable_runner_up() = LayoutToProto(
        runner_up.ok() ? *runner_up : ranked[1]->trial.layout);
    v1::RecommendedLayout& b = all[*best_throughput];
    if (b.provenance() == v1::MEASURED) {
      b.set_why(absl::StrCat(
          b.why(), "; leads the next measured layout by ", lead->Text(),
          lead->Clear(kClearLeadSds)
              ? ""
              : " (within the noise: trials cannot tell the two apart yet)",
          absl::StrFormat(", noise %.1f%% per trial from %s",
                          100 * noise.log_sd, noise.source)));
    }
  }
  *out.mutable_best_throughput() = all[*best_throughput];
  *out.mutable_best_energy() = all[*best_energy];
  for (const costmodel::ParetoPoint& point : front.points()) {
    *out.add_pareto() = all[static_cast<size_t>(point.id)];
  }
  return out;
}

std::string RecommendationToJson(const v1::Recommendation& recommendation) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(recommendation, &json,
                                                    options);
  return json;
}

absl::StatusOr<v1::Recommendation> RecommendationFromJson(
    absl::string_view json) {
  v1::Recommendation out;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto status = google::protobuf::util::JsonStringToMessage(
      std::string(json), &out, options);
  if (!status.ok()) {
    return absl::DataLossError(absl::StrCat(
        "stored recommendation does not parse: ",
        std::string(status.message().data(), status.message().size())));
  }
  return out;
}

}  // namespace tessera::service
