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

}  // namespace tessera
