#include "proto/convert.h"

#include <cmath>
#include <string>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/known_names.h"
#include "core/status_macros.h"
#include "core/units.h"
#include "costmodel/stacks/training_stack.h"

namespace tessera {
namespace {

absl::Status FieldError(absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", message));
}

// Core validators name GPU fields "gpu.<field>"; in a spec the GPU sits under
// the cluster.
absl::Status InSpecPath(const absl::Status& status) {
  if (status.ok()) return status;
  absl::string_view message = status.message();
  if (absl::StartsWith(message, "gpu.") || absl::StartsWith(message, "gpu:")) {
    return absl::InvalidArgumentError(absl::StrCat("cluster.", message));
  }
  return absl::InvalidArgumentError(message);
}

// Applies an explicit finite number over `*value`; `allow_zero` admits 0.
absl::Status ApplyNumber(absl::string_view field, bool has, double given,
                         bool allow_zero, double* value, bool* changed) {
  if (!has) return absl::OkStatus();
  if (!std::isfinite(given) || given < 0 || (given == 0 && !allow_zero)) {
    return FieldError(field,
                      absl::StrCat("must be a finite ",
                                   allow_zero ? "non-negative" : "positive",
                                   " number, got ", given));
  }
  if (*value != given) *changed = true;
  *value = given;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ModelConfig> ModelFromSpec(const v1::ModelSpec& spec) {
  ModelOverrides o;
  if (spec.has_layers()) o.layers = spec.layers();
  if (spec.has_hidden()) o.hidden = spec.hidden();
  if (spec.has_heads()) o.heads = spec.heads();
  if (spec.has_kv_heads()) o.kv_heads = spec.kv_heads();
  if (spec.has_ffn_hidden()) o.ffn_hidden = spec.ffn_hidden();
  if (spec.has_vocab()) o.vocab = spec.vocab();
  if (spec.has_mlp()) o.mlp = spec.mlp();
  if (spec.has_tie_embeddings()) o.tie_embeddings = spec.tie_embeddings();
  if (spec.has_rope_theta()) o.rope_theta = spec.rope_theta();
  if (spec.has_norm_eps()) o.norm_eps = spec.norm_eps();
  return ResolveModel(spec.preset(), o);
}

absl::StatusOr<GpuSpec> GpuFromSpec(const v1::GpuSpec& spec) {
  GpuSpec g;
  g.name = "custom";
  bool changed = false;
  if (!spec.preset().empty()) {
    absl::StatusOr<GpuSpec> preset = GpuPreset(spec.preset());
    if (!preset.ok()) {
      return FieldError(
          "cluster.gpu.preset",
          UnknownNameMessage("preset", spec.preset(), GpuPresetNames()));
    }
    g = *preset;
  } else {
    const std::pair<const char*, bool> required[] = {
        {"peak_dense_tflops", spec.has_peak_dense_tflops()},
        {"memory_bytes", spec.has_memory_bytes()},
        {"hbm_gbs", spec.has_hbm_gbs()},
        {"nvlink_gbs", spec.has_nvlink_gbs()},
        {"inter_node_gbs", spec.has_inter_node_gbs()},
        {"tdp_w", spec.has_tdp_w()}};
    bool any = false;
    for (const auto& [field, has] : required) any = any || has;
    if (!any) {
      return FieldError(
          "cluster.gpu",
          absl::StrCat("give a preset (", absl::StrJoin(GpuPresetNames(), ", "),
                       ") or every datasheet figure"));
    }
    for (const auto& [field, has] : required) {
      if (!has) {
        return FieldError(absl::StrCat("cluster.gpu.", field),
                          "required without a preset");
      }
    }
  }
  TESSERA_RETURN_IF_ERROR(ApplyNumber(
      "cluster.gpu.peak_dense_tflops", spec.has_peak_dense_tflops(),
      spec.peak_dense_tflops(), false, &g.peak_dense_tflops, &changed));
  if (spec.has_memory_bytes()) {
    // Up to 1 PiB per GPU.
    if (spec.memory_bytes() < 1 || spec.memory_bytes() > (int64_t{1} << 50)) {
      return FieldError("cluster.gpu.memory_bytes",
                        absl::StrCat("must be an integer in [1, 2^50], got ",
                                     spec.memory_bytes()));
    }
    if (g.memory_bytes != spec.memory_bytes()) changed = true;
    g.memory_bytes = spec.memory_bytes();
  }
  TESSERA_RETURN_IF_ERROR(ApplyNumber("cluster.gpu.hbm_gbs", spec.has_hbm_gbs(),
                                      spec.hbm_gbs(), false, &g.hbm_gbs,
                                      &changed));
  TESSERA_RETURN_IF_ERROR(ApplyNumber("cluster.gpu.nvlink_gbs",
                                      spec.has_nvlink_gbs(), spec.nvlink_gbs(),
                                      false, &g.nvlink_gbs, &changed));
  TESSERA_RETURN_IF_ERROR(
      ApplyNumber("cluster.gpu.inter_node_gbs", spec.has_inter_node_gbs(),
                  spec.inter_node_gbs(), false, &g.inter_node_gbs, &changed));
  TESSERA_RETURN_IF_ERROR(ApplyNumber("cluster.gpu.tdp_w", spec.has_tdp_w(),
                                      spec.tdp_w(), false, &g.tdp_w, &changed));
  TESSERA_RETURN_IF_ERROR(ApplyNumber("cluster.gpu.idle_w", spec.has_idle_w(),
                                      spec.idle_w(), true, &g.idle_w,
                                      &changed));
  TESSERA_RETURN_IF_ERROR(
      ApplyNumber("cluster.gpu.peak_fp8_tflops", spec.has_peak_fp8_tflops(),
                  spec.peak_fp8_tflops(), true, &g.peak_fp8_tflops, &changed));
  if (spec.has_architecture()) {
    if (!IsKnownArchitecture(spec.architecture())) {
      return FieldError(
          "cluster.gpu.architecture",
          absl::StrCat("'", spec.architecture(), "' is not one of ",
                       absl::StrJoin(KnownArchitectures(), ", "),
                       " or empty (unknown)"));
    }
    if (g.architecture != spec.architecture()) changed = true;
    g.architecture = spec.architecture();
  }
  // Unchanged, a preset keeps its own name ("H100-SXM" is h100-sxm).
  if (changed) g.name = "custom";
  TESSERA_RETURN_IF_ERROR(InSpecPath(ValidateGpu(g)));
  return g;
}

absl::StatusOr<ClusterConfig> ClusterFromSpec(const v1::ClusterSpec& spec) {
  if (!spec.has_gpu()) {
    return FieldError("cluster.gpu",
                      absl::StrCat("required: a preset (",
                                   absl::StrJoin(GpuPresetNames(), ", "),
                                   ") or every datasheet figure"));
  }
  TESSERA_ASSIGN_OR_RETURN(GpuSpec gpu, GpuFromSpec(spec.gpu()));
  const std::tuple<const char*, int64_t, int64_t> counts[] = {
      {"cluster.nodes", spec.nodes(), kMaxNodes},
      {"cluster.gpus_per_node", spec.gpus_per_node(), kMaxGpusPerNode}};
  for (const auto& [field, value, max_value] : counts) {
    if (value < 1 || value > max_value) {
      return FieldError(field, absl::StrCat("must be an integer in [1, ",
                                            max_value, "], got ", value));
    }
  }
  ClusterConfig c = MakeCluster(gpu, spec.nodes(), spec.gpus_per_node());
  bool changed = false;
  TESSERA_RETURN_IF_ERROR(
      ApplyNumber("cluster.intra_node_gbs", spec.has_intra_node_gbs(),
                  spec.intra_node_gbs(), false, &c.intra_node_gbs, &changed));
  TESSERA_RETURN_IF_ERROR(
      ApplyNumber("cluster.inter_node_gbs", spec.has_inter_node_gbs(),
                  spec.inter_node_gbs(), false, &c.inter_node_gbs, &changed));
  TESSERA_RETURN_IF_ERROR(ApplyNumber(
      "cluster.intra_node_latency_us", spec.has_intra_node_latency_us(),
      spec.intra_node_latency_us(), true, &c.intra_node_latency_us, &changed));
  TESSERA_RETURN_IF_ERROR(ApplyNumber(
      "cluster.inter_node_latency_us", spec.has_inter_node_latency_us(),
      spec.inter_node_latency_us(), true, &c.inter_node_latency_us, &changed));
  if (spec.has_memory_headroom_gib()) {
    c.memory_headroom_bytes = spec.memory_headroom_gib() * kGiB;
  }
  if (spec.has_memory_headroom_fraction()) {
    c.memory_headroom_fraction = spec.memory_headroom_fraction();
  }
  TESSERA_RETURN_IF_ERROR(InSpecPath(ValidateCluster(c)));
  return c;
}

absl::StatusOr<TrainingConfig> TrainingFromSpec(const v1::TrainingSpec& spec) {
  const std::tuple<const char*, int64_t, int64_t> counts[] = {
      {"training.global_batch", spec.global_batch(), kMaxGlobalBatch},
      {"training.seq_len", spec.seq_len(), kMaxSeqLen}};
  for (const auto& [field, value, max_value] : counts) {
    if (value < 1 || value > max_value) {
      return FieldError(field, absl::StrCat("must be an integer in [1, ",
                                            max_value, "], got ", value));
    }
  }
  TrainingConfig t;
  t.global_batch = spec.global_batch();
  t.seq_len = spec.seq_len();
  t.total_tokens = spec.total_tokens();
  if (!spec.stack().empty()) t.stack = spec.stack();
  t.stack_options.assign(spec.stack_options().begin(),
                         spec.stack_options().end());
  if (!spec.precision().empty()) {
    TESSERA_ASSIGN_OR_RETURN(t.precision, ParsePrecision(spec.precision()));
  }
  TESSERA_RETURN_IF_ERROR(ValidateTraining(t));
  // The stack and its options, checked against costmodel/stacks.
  absl::StatusOr<const costmodel::TrainingStack*> stack =
      costmodel::FindStack(t.stack);
  if (!stack.ok()) return stack.status();
  t.stack = (*stack)->name;  // its own name: "TorchTitan" is torchtitan
  TESSERA_RETURN_IF_ERROR(
      costmodel::EnabledOptions(**stack, t.stack_options).status());
  if (!(*stack)->SupportsPrecision(t.precision)) {
    return FieldError("training.precision",
                      absl::StrCat("the ", t.stack, " stack does not train in ",
                                   PrecisionName(t.precision)));
  }
  return t;
}

absl::StatusOr<Workload> WorkloadFromSpec(const v1::StudySpec& spec) {
  if (!spec.has_model()) {
    return FieldError("model", "required: a preset or explicit dimensions");
  }
  if (!spec.has_cluster()) {
    return FieldError("cluster", "required: gpu, nodes, gpus_per_node");
  }
  if (!spec.has_training()) {
    return FieldError("training", "required: global_batch, seq_len");
  }
  Workload w;
  TESSERA_ASSIGN_OR_RETURN(w.model, ModelFromSpec(spec.model()));
  TESSERA_ASSIGN_OR_RETURN(w.cluster, ClusterFromSpec(spec.cluster()));
  TESSERA_ASSIGN_OR_RETURN(w.training, TrainingFromSpec(spec.training()));
  TESSERA_RETURN_IF_ERROR(InSpecPath(ValidateWorkload(w)));
  return w;
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

v1::StudySpec SpecFromWorkload(const Workload& w) {
  v1::StudySpec spec;
  v1::ModelSpec* m = spec.mutable_model();
  if (ModelPreset(w.model.name).ok()) m->set_preset(w.model.name);
  m->set_layers(w.model.layers);
  m->set_hidden(w.model.hidden);
  m->set_heads(w.model.heads);
  m->set_kv_heads(w.model.kv_heads);
  m->set_ffn_hidden(w.model.ffn_hidden);
  m->set_vocab(w.model.vocab);
  m->set_mlp(std::string(MlpKindName(w.model.mlp)));
  m->set_tie_embeddings(w.model.tie_embeddings);
  m->set_rope_theta(w.model.rope_theta);
  m->set_norm_eps(w.model.norm_eps);
  v1::ClusterSpec* c = spec.mutable_cluster();
  v1::GpuSpec* g = c->mutable_gpu();
  const GpuSpec& gpu = w.cluster.gpu;
  if (GpuPreset(gpu.name).ok()) g->set_preset(gpu.name);
  g->set_peak_dense_tflops(gpu.peak_dense_tflops);
  g->set_memory_bytes(gpu.memory_bytes);
  g->set_hbm_gbs(gpu.hbm_gbs);
  g->set_nvlink_gbs(gpu.nvlink_gbs);
  g->set_inter_node_gbs(gpu.inter_node_gbs);
  g->set_tdp_w(gpu.tdp_w);
  g->set_idle_w(gpu.idle_w);
  g->set_peak_fp8_tflops(gpu.peak_fp8_tflops);
  if (!gpu.architecture.empty()) g->set_architecture(gpu.architecture);
  c->set_nodes(w.cluster.nodes);
  c->set_gpus_per_node(w.cluster.gpus_per_node);
  c->set_intra_node_gbs(w.cluster.intra_node_gbs);
  c->set_inter_node_gbs(w.cluster.inter_node_gbs);
  c->set_intra_node_latency_us(w.cluster.intra_node_latency_us);
  c->set_inter_node_latency_us(w.cluster.inter_node_latency_us);
  if (w.cluster.memory_headroom_bytes.has_value()) {
    c->set_memory_headroom_gib(*w.cluster.memory_headroom_bytes /
                               (1024.0 * 1024.0 * 1024.0));
  }
  if (w.cluster.memory_headroom_fraction.has_value()) {
    c->set_memory_headroom_fraction(*w.cluster.memory_headroom_fraction);
  }
  v1::TrainingSpec* t = spec.mutable_training();
  t->set_global_batch(w.training.global_batch);
  t->set_seq_len(w.training.seq_len);
  t->set_total_tokens(w.training.total_tokens);
  t->set_stack(w.training.stack);
  for (const std::string& o : w.training.stack_options) t->add_stack_options(o);
  t->set_precision(std::string(PrecisionName(w.training.precision)));
  return spec;
}

v1::Layout LayoutToProto(const Layout& l) {
  v1::Layout p;
  p.set_tp(l.tp);
  p.set_sp(l.sp);
  p.set_pp(l.pp);
  p.set_vpp(l.vpp);
  p.set_cp(l.cp);
  p.set_dp(l.dp);
  p.set_zero(l.zero);
  p.set_shard_group(l.shard_group);
  p.set_micro_batch(l.micro_batch);
  p.set_grad_accum(l.grad_accum);
  p.set_recompute(std::string(RecomputeName(l.recompute)));
  return p;
}

absl::StatusOr<Layout> LayoutFromProto(const v1::Layout& p) {
  // core ParseLayout's bound: products of degrees stay far from overflow.
  constexpr int64_t kMaxDegree = 1 << 20;
  Layout l;
  // 0 keeps the default (1 for degrees; "derive" for dp, grad_accum,
  // shard_group, whose defaults are 0).
  const std::tuple<const char*, int64_t, int64_t*> fields[] = {
      {"tp", p.tp(), &l.tp},
      {"pp", p.pp(), &l.pp},
      {"vpp", p.vpp(), &l.vpp},
      {"cp", p.cp(), &l.cp},
      {"dp", p.dp(), &l.dp},
      {"shard_group", p.shard_group(), &l.shard_group},
      {"micro_batch", p.micro_batch(), &l.micro_batch},
      {"grad_accum", p.grad_accum(), &l.grad_accum}};
  for (const auto& [field, value, target] : fields) {
    if (value < 0 || value > kMaxDegree) {
      return FieldError(absl::StrCat("layout.", field),
                        absl::StrCat("must be an integer in [0 (default), ",
                                     kMaxDegree, "], got ", value));
    }
    if (value != 0) *target = value;
  }
  if (p.zero() < 0 || p.zero() > 3) {
    return FieldError("layout.zero",
                      absl::StrCat("must be 0, 1, 2 or 3, got ", p.zero()));
  }
  l.zero = p.zero();
  l.sp = p.sp();
  if (!p.recompute().empty()) {
    TESSERA_ASSIGN_OR_RETURN(l.recompute, ParseRecompute(p.recompute()));
  }
  return l;
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
