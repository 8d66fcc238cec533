#include "service/plan_convert.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "costmodel/stacks/training_stack.h"
#include "proto/convert.h"

namespace tessera {
namespace {

absl::Status FieldError(absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", message));
}

}  // namespace

absl::StatusOr<Workload> CheckedWorkloadFromSpec(const v1::StudySpec& spec) {
  TESSERA_ASSIGN_OR_RETURN(Workload workload, WorkloadFromSpec(spec));
  TESSERA_RETURN_IF_ERROR(costmodel::ResolveTrainingStack(workload.training));
  return workload;
}

absl::StatusOr<costmodel::SearchOptions> SearchOptionsFromSpec(
    const v1::SearchOptions& spec) {
  costmodel::SearchOptions options;
  if (spec.has_top()) {
    if (spec.top() < 0) {
      return FieldError("search.top",
                        absl::StrCat("must be 0 (every feasible layout) or "
                                     "positive, got ",
                                     spec.top()));
    }
    options.top = spec.top();
  }
  if (spec.candidates_size() > costmodel::kMaxSearchCandidates) {
    return FieldError("search.candidates",
                      absl::StrCat(spec.candidates_size(),
                                   " layouts, at most ",
                                   costmodel::kMaxSearchCandidates));
  }
  for (int i = 0; i < spec.candidates_size(); ++i) {
    absl::StatusOr<Layout> layout = LayoutFromProto(spec.candidates(i));
    if (!layout.ok()) {
      return FieldError(absl::StrCat("search.candidates[", i, "]"),
                        layout.status().message());
    }
    options.candidates.push_back(*layout);
  }
  return options;
}

absl::StatusOr<costmodel::ScaleOptions> ScaleOptionsFromSpec(
    const v1::SearchOptions& spec) {
  costmodel::ScaleOptions options;
  TESSERA_ASSIGN_OR_RETURN(options.layouts, SearchOptionsFromSpec(spec));
  const v1::ScaleSearch& scale = spec.scale();
  if (scale.deadline_days() != 0) {
    if (!(scale.deadline_days() > 0) || !std::isfinite(scale.deadline_days())) {
      return FieldError("search.scale.deadline_days",
                        absl::StrCat("must be positive and finite (0: no "
                                     "deadline), got ",
                                     scale.deadline_days()));
    }
    options.deadline_days = scale.deadline_days();
    options.objective = costmodel::RunObjective::kEnergy;
  }
  if (!scale.objective().empty()) {
    absl::StatusOr<costmodel::RunObjective> objective =
        costmodel::ParseRunObjective(scale.objective());
    if (!objective.ok()) {
      return FieldError("search.scale.objective",
                        absl::StrCat("'", scale.objective(),
                                     "' is not one of time, energy, "
                                     "gpu-hours"));
    }
    options.objective = *objective;
  }
  options.charge_idle_gpus = scale.charge_idle_gpus();
  for (int i = 0; i < scale.node_counts_size(); ++i) {
    if (scale.node_counts(i) < 1) {
      return FieldError(absl::StrCat("search.scale.node_counts[", i, "]"),
                        absl::StrCat("must be at least 1, got ",
                                     scale.node_counts(i)));
    }
    options.node_counts.push_back(scale.node_counts(i));
  }
  return options;
}

v1::Prediction PredictionToProto(const costmodel::Prediction& p) {
  v1::Prediction out;
  out.set_step_time_s(p.step_time_s);
  out.set_tokens_per_s(p.tokens_per_s);
  out.set_tokens_per_s_per_gpu(p.tokens_per_s_per_gpu);
  out.set_tflops_per_gpu(p.tflops_per_gpu);
  out.set_mfu(p.mfu);
  out.set_memory_gib_per_gpu(p.memory_gib_per_gpu);
  v1::MemoryBreakdown* m = out.mutable_memory_breakdown();
  m->set_weights_bytes(p.memory.weights_bytes);
  m->set_master_weights_bytes(p.memory.master_weights_bytes);
  m->set_gradients_bytes(p.memory.gradients_bytes);
  m->set_optimizer_bytes(p.memory.optimizer_bytes);
  m->set_activations_bytes(p.memory.activations_bytes);
  m->set_logits_bytes(p.memory.logits_bytes);
  m->set_gathered_params_bytes(p.memory.gathered_params_bytes);
  m->set_overhead_bytes(p.memory.overhead_bytes);
  m->set_total_bytes(p.memory.total_bytes);
  out.set_compute_s(p.compute_s);
  out.set_comm_s(p.comm_s);
  out.set_exposed_comm_s(p.exposed_comm_s);
  out.set_bubble_s(p.bubble_s);
  out.set_tp_comm_s(p.tp_comm_s);
  out.set_pp_comm_s(p.pp_comm_s);
  out.set_dp_comm_s(p.dp_comm_s);
  out.set_cp_comm_s(p.cp_comm_s);
  out.set_tp_exposed_s(p.tp_exposed_s);
  out.set_pp_exposed_s(p.pp_exposed_s);
  out.set_dp_exposed_s(p.dp_exposed_s);
  out.set_cp_exposed_s(p.cp_exposed_s);
  out.set_overlap_slowdown_s(p.overlap_slowdown_s);
  out.set_host_wait_s(p.host_wait_s);
  out.set_watts_per_gpu(p.watts_per_gpu);
  out.set_tokens_per_joule(p.tokens_per_joule);
  if (p.full_run.has_value()) {
    v1::FullRun* f = out.mutable_full_run();
    f->set_days(p.full_run->days);
    f->set_energy_mwh(p.full_run->energy_mwh);
    f->set_gpu_hours(p.full_run->gpu_hours);
  }
  return out;
}

costmodel::Prediction PredictionFromProto(const v1::Prediction& p) {
  costmodel::Prediction out;
  out.step_time_s = p.step_time_s();
  out.tokens_per_s = p.tokens_per_s();
  out.tokens_per_s_per_gpu = p.tokens_per_s_per_gpu();
  out.tflops_per_gpu = p.tflops_per_gpu();
  out.mfu = p.mfu();
  out.memory_gib_per_gpu = p.memory_gib_per_gpu();
  const v1::MemoryBreakdown& m = p.memory_breakdown();
  out.memory.weights_bytes = m.weights_bytes();
  out.memory.master_weights_bytes = m.master_weights_bytes();
  out.memory.gradients_bytes = m.gradients_bytes();
  out.memory.optimizer_bytes = m.optimizer_bytes();
  out.memory.activations_bytes = m.activations_bytes();
  out.memory.logits_bytes = m.logits_bytes();
  out.memory.gathered_params_bytes = m.gathered_params_bytes();
  out.memory.overhead_bytes = m.overhead_bytes();
  out.memory.total_bytes = m.total_bytes();
  out.compute_s = p.compute_s();
  out.comm_s = p.comm_s();
  out.exposed_comm_s = p.exposed_comm_s();
  out.bubble_s = p.bubble_s();
  out.tp_comm_s = p.tp_comm_s();
  out.pp_comm_s = p.pp_comm_s();
  out.dp_comm_s = p.dp_comm_s();
  out.cp_comm_s = p.cp_comm_s();
  out.tp_exposed_s = p.tp_exposed_s();
  out.pp_exposed_s = p.pp_exposed_s();
  out.dp_exposed_s = p.dp_exposed_s();
  out.cp_exposed_s = p.cp_exposed_s();
  out.overlap_slowdown_s = p.overlap_slowdown_s();
  out.host_wait_s = p.host_wait_s();
  out.watts_per_gpu = p.watts_per_gpu();
  out.tokens_per_joule = p.tokens_per_joule();
  if (p.has_full_run()) {
    out.full_run = costmodel::FullRunPrediction{p.full_run().days(),
                                              p.full_run().energy_mwh(),
                                              p.full_run().gpu_hours()};
  }
  return out;
}

v1::LayoutEvaluation EvaluationToProto(const costmodel::LayoutEvaluation& e) {
  v1::LayoutEvaluation out;
  *out.mutable_layout() = LayoutToProto(e.layout);
  out.set_feasible(e.feasible);
  out.set_reason(e.reason);
  *out.mutable_prediction() = PredictionToProto(e.prediction);
  return out;
}

absl::StatusOr<costmodel::LayoutEvaluation> EvaluationFromProto(
    const v1::LayoutEvaluation& p) {
  costmodel::LayoutEvaluation out;
  TESSERA_ASSIGN_OR_RETURN(out.layout, LayoutFromProto(p.layout()));
  out.feasible = p.feasible();
  out.reason = p.reason();
  out.prediction = PredictionFromProto(p.prediction());
  return out;
}

v1::StepTimeInterval IntervalToProto(const costmodel::StepTimeInterval& i) {
  v1::StepTimeInterval out;
  out.set_low_s(i.low_s);
  out.set_high_s(i.high_s);
  out.set_log_sd(i.log_sd);
  return out;
}

costmodel::StepTimeInterval IntervalFromProto(const v1::StepTimeInterval& p) {
  return {.low_s = p.low_s(), .high_s = p.high_s(), .log_sd = p.log_sd()};
}

v1::PlanUncertainty PlanUncertaintyToProto(const costmodel::PlanUncertainty& u) {
  v1::PlanUncertainty out;
  out.set_source(u.spreads.source);
  out.set_model_log_sd(u.spreads.model_log_sd);
  for (const costmodel::StepTimeInterval& i : u.ranking.intervals) {
    *out.add_candidates() = IntervalToProto(i);
  }
  for (const bool within : u.ranking.within_error_of_best) {
    out.add_within_error_of_best(within);
  }
  out.set_within_error_count(u.ranking.within_error_count);
  *out.mutable_best_throughput() = IntervalToProto(u.best_throughput);
  *out.mutable_best_energy() = IntervalToProto(u.best_energy);
  return out;
}

costmodel::PlanUncertainty PlanUncertaintyFromProto(
    const v1::PlanUncertainty& p) {
  costmodel::PlanUncertainty out;
  out.spreads.source = p.source();
  out.spreads.model_log_sd = p.model_log_sd();
  for (const v1::StepTimeInterval& i : p.candidates()) {
    out.ranking.intervals.push_back(IntervalFromProto(i));
  }
  out.ranking.within_error_of_best.assign(p.within_error_of_best().begin(),
                                          p.within_error_of_best().end());
  out.ranking.within_error_count = p.within_error_count();
  out.best_throughput = IntervalFromProto(p.best_throughput());
  out.best_energy = IntervalFromProto(p.best_energy());
  return out;
}

v1::PlanResponse PlanResponseFromResult(const costmodel::SearchResult& r) {
  v1::PlanResponse out;
  out.set_searched(r.searched);
  out.set_scored(r.scored);
  out.set_feasible(r.feasible);
  out.set_elapsed_ms(r.elapsed_ms);
  for (const costmodel::LayoutEvaluation& e : r.candidates) {
    *out.add_candidates() = EvaluationToProto(e);
  }
  if (r.feasible > 0) {
    *out.mutable_best_throughput() = EvaluationToProto(r.best_throughput);
    *out.mutable_best_energy() = EvaluationToProto(r.best_energy);
  }
  for (const costmodel::LayoutEvaluation& e : r.pareto) {
    *out.add_pareto() = EvaluationToProto(e);
  }
  for (const auto& [reason, count] : r.rejected) {
    (*out.mutable_rejected())[reason] = count;
  }
  return out;
}

absl::StatusOr<costmodel::SearchResult> SearchResultFromPlanResponse(
    const v1::PlanResponse& p) {
  costmodel::SearchResult out;
  out.searched = p.searched();
  out.scored = p.scored();
  out.feasible = p.feasible();
  out.elapsed_ms = p.elapsed_ms();
  for (const v1::LayoutEvaluation& e : p.candidates()) {
    TESSERA_ASSIGN_OR_RETURN(costmodel::LayoutEvaluation c,
                             EvaluationFromProto(e));
    out.candidates.push_back(std::move(c));
  }
  if (p.has_best_throughput()) {
    TESSERA_ASSIGN_OR_RETURN(out.best_throughput,
                             EvaluationFromProto(p.best_throughput()));
  }
  if (p.has_best_energy()) {
    TESSERA_ASSIGN_OR_RETURN(out.best_energy,
                             EvaluationFromProto(p.best_energy()));
  }
  for (const v1::LayoutEvaluation& e : p.pareto()) {
    TESSERA_ASSIGN_OR_RETURN(costmodel::LayoutEvaluation c,
                             EvaluationFromProto(e));
    out.pareto.push_back(std::move(c));
  }
  for (const auto& [reason, count] : p.rejected()) {
    out.rejected[reason] = count;
  }
  return out;
}

}  // namespace tessera
