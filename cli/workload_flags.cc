#include "cli/workload_flags.h"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/gpu.h"
#include "core/model.h"
#include "core/status_macros.h"
#include "core/units.h"
#include "costmodel/stacks/training_stack.h"
#include "proto/convert.h"
#include "proto/spec_json.h"
#include "service/plan_convert.h"

namespace tessera::cli {
namespace {

// --headroom's text on `cluster`, replacing the file's headroom: a number
// below 1 or with % is a fraction of the GPU's memory, else GiB (a bytes
// suffix: 8GiB, 8192MiB).
absl::Status SetMemoryHeadroom(absl::string_view text, v1::ClusterSpec* c) {
  c->clear_memory_headroom_gib();
  c->clear_memory_headroom_fraction();
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--headroom: '", text, "' ", why,
        " (GiB: 8 or 8GiB; a fraction of the GPU's memory: 0.1 or 10%)"));
  };
  double value = 0;
  if (absl::ConsumeSuffix(&text, "%")) {
    if (!absl::SimpleAtod(text, &value) || !(value >= 0 && value < 100)) {
      return bad("is not a percentage in [0, 100)");
    }
    c->set_memory_headroom_fraction(value / 100);
    return absl::OkStatus();
  }
  if (absl::SimpleAtod(text, &value)) {
    if (!(value >= 0) || !std::isfinite(value)) return bad("is negative");
    if (value > 0 && value < 1) {
      c->set_memory_headroom_fraction(value);
    } else {
      c->set_memory_headroom_gib(value);
    }
    return absl::OkStatus();
  }
  absl::StatusOr<int64_t> bytes = ParseSize(text, SizeUnit::kBytes);
  if (!bytes.ok()) return bad(absl::StrCat("is not a size: ", bytes.status().message()));
  if (*bytes < 0) return bad("is negative");
  c->set_memory_headroom_gib(static_cast<double>(*bytes) / kGiB);
  return absl::OkStatus();
}

}  // namespace
namespace {

// A spec field and the flag that sets it.
struct FieldFlag {
  const char* field;
  const char* flag;
  bool given;
};

std::vector<FieldFlag> FieldFlags(const WorkloadFlags& f) {
  return {
      {"model.preset", "model", f.model.has_value()},
      {"model.layers", "layers", f.layers.has_value()},
      {"model.hidden", "hidden", f.hidden.has_value()},
      {"model.heads", "heads", f.heads.has_value()},
      {"model.kv_heads", "kv-heads", f.kv_heads.has_value()},
      {"model.ffn_hidden", "ffn-hidden", f.ffn_hidden.has_value()},
      {"model.vocab", "vocab", f.vocab.has_value()},
      {"model.mlp", "mlp", f.mlp.has_value()},
      {"cluster.gpu.preset", "gpu", f.gpu.has_value()},
      {"cluster.gpu", "gpu", f.gpu.has_value()},
      {"cluster.nodes", "nodes", f.nodes.has_value()},
      {"cluster.gpus_per_node", "gpus-per-node", f.gpus_per_node.has_value()},
      {"cluster.intra_node_gbs", "intra-node-gbs",
       f.intra_node_gbs.has_value()},
      {"cluster.inter_node_gbs", "inter-node-gbs",
       f.inter_node_gbs.has_value()},
      {"cluster.inter_node_latency_us", "inter-node-latency-us",
       f.inter_node_latency_us.has_value()},
      {"cluster.memory_headroom_gib", "headroom", f.headroom.has_value()},
      {"cluster.memory_headroom_fraction", "headroom", f.headroom.has_value()},
      {"training.global_batch", "global-batch", f.global_batch.has_value()},
      {"training.seq_len", "seq-len", f.seq_len.has_value()},
      {"training.total_tokens", "total-tokens", f.total_tokens.has_value()},
      {"training.stack", "stack", f.stack.has_value()},
      {"training.stack_options", "stack-options", f.stack_options.has_value()},
      {"training.precision", "precision", f.precision.has_value()},
  };
}

// Says which flag or file an invalid field came from: the flag when it was
// given or when there is no file, else the file.
absl::Status Attribute(const WorkloadFlags& f, const absl::Status& status) {
  const absl::string_view message = status.message();
  const absl::string_view field = message.substr(0, message.find(':'));
  for (const FieldFlag& ff : FieldFlags(f)) {
    if (field == ff.field && (ff.given || !f.spec_path.has_value())) {
      return absl::Status(status.code(),
                          absl::StrCat(message, " (--", ff.flag, ")"));
    }
  }
  if (f.spec_path.has_value() && !absl::StartsWith(message, "spec: ")) {
    return absl::Status(status.code(),
                        absl::StrCat("spec: ", *f.spec_path, ": ", message));
  }
  return status;
}

}  // namespace

bool WorkloadFlags::Given(absl::string_view flag) const {
  for (const FieldFlag& ff : FieldFlags(*this)) {
    if (flag == ff.flag) return ff.given;
  }
  return false;
}

std::vector<std::string> WorkloadFlags::MissingFlags(
    const std::function<bool(absl::string_view)>& given) {
  std::vector<std::string> missing;
  auto require = [&](absl::string_view field, absl::string_view flags) {
    missing.push_back(absl::StrCat(field, ": required (", flags, ")"));
  };
  if (given("spec")) return missing;
  bool any_dim = false;
  for (const char* dim :
       {"layers", "hidden", "heads", "kv-heads", "ffn-hidden", "vocab"}) {
    any_dim = any_dim || given(dim);
  }
  if (!given("model") && !any_dim) {
    require("model", absl::StrCat("--model NAME: ",
                                  absl::StrJoin(ModelPresetNames(), ", "),
                                  "; or --layers --hidden --heads "
                                  "--ffn-hidden --vocab"));
  }
  if (!given("gpu")) {
    require("cluster.gpu", absl::StrCat("--gpu NAME: ",
                                        absl::StrJoin(GpuPresetNames(), ", ")));
  }
  if (!given("nodes")) require("cluster.nodes", "--nodes N");
  if (!given("gpus-per-node")) {
    require("cluster.gpus_per_node", "--gpus-per-node N");
  }
  if (!given("global-batch")) {
    require("training.global_batch", "--global-batch N, in sequences");
  }
  if (!given("seq-len")) require("training.seq_len", "--seq-len N");
  return missing;
}

void WorkloadFlags::Register(FlagSet* flags) {
  flags->AddSection(
      "Workload: a study file, flags, or a study file with flags over it");
  flags->AddString("spec", "FILE",
                   "a StudySpec in JSON (see deploy/examples/study.json)",
                   &spec_path);
  flags->AddString(
      "model", "NAME",
      absl::StrCat("model preset: ", absl::StrJoin(ModelPresetNames(), ", ")),
      &model);
  flags->AddInt("layers", "N",
                "transformer layers (instead of or over --model)", &layers);
  flags->AddInt("hidden", "N", "hidden size", &hidden);
  flags->AddInt("heads", "N", "attention heads", &heads);
  flags->AddInt("kv-heads", "N",
                "key/value heads (grouped-query attention; default: heads)",
                &kv_heads);
  flags->AddInt("ffn-hidden", "N", "MLP inner size", &ffn_hidden);
  flags->AddInt("vocab", "N", "vocabulary size", &vocab);
  flags->AddString("mlp", "KIND", "swiglu (Llama, default) or gelu (GPT)",
                   &mlp);
  flags->AddSwitch("tie-embeddings",
                   "the output projection shares the embedding",
                   &tie_embeddings);
  flags->AddString(
      "gpu", "NAME",
      absl::StrCat("GPU preset: ", absl::StrJoin(GpuPresetNames(), ", ")),
      &gpu);
  flags->AddInt("nodes", "N", "nodes in the cluster", &nodes);
  flags->AddInt("gpus-per-node", "N", "GPUs per node", &gpus_per_node);
  flags->AddDouble("intra-node-gbs", "GB/s",
                   "NVLink bandwidth per GPU, one direction (default: the "
                   "GPU's)",
                   &intra_node_gbs);
  flags->AddDouble("inter-node-gbs", "GB/s",
                   "network bandwidth per node, one direction (default: the "
                   "GPU's typical node)",
                   &inter_node_gbs);
  flags->AddDouble("inter-node-latency-us", "US",
                   "latency per NCCL step across nodes (default: 5)",
                   &inter_node_latency_us);
  flags->AddString("headroom", "GIB|FRACTION",
                   absl::StrCat(
                       "device memory per GPU a layout must leave free: GiB "
                       "(8, 8GiB) or a fraction of the GPU's memory (0.1, "
                       "10%); 0 for none (default ",
                       100 * kDefaultMemoryHeadroomFraction, "%)"),
                   &headroom);
  flags->AddSize("global-batch", "N", "sequences per optimizer step",
                 SizeUnit::kCount, &global_batch);
  flags->AddSize("seq-len", "N", "tokens per sequence (8k, 128Ki)",
                 SizeUnit::kCount, &seq_len);
  flags->AddSize("total-tokens", "N",
                 "token budget of the whole run (e.g. 1e12, 15T): adds days, "
                 "MWh and GPU-hours",
                 SizeUnit::kCount, &total_tokens);
  flags->AddString("stack", "NAME",
                   absl::StrCat("training stack: ",
                                absl::StrJoin(costmodel::StackNames(), ", "),
                                " (default ", kDefaultTrainingStack, ")"),
                   &stack);
  flags->AddString("stack-options", "A,B",
                   "changes to the stack's default options: NAME on, no-NAME "
                   "off (e.g. async-tp,no-compile)",
                   &stack_options);
  flags->AddString("precision", "P", "bf16 (default) or fp8 linear layers",
                   &precision);
  flags->AddRequirement(&WorkloadFlags::MissingFlags);
}

absl::StatusOr<v1::StudySpec> WorkloadFlags::ToSpec() const {
  v1::StudySpec spec;
  if (spec_path.has_value()) {
    absl::StatusOr<v1::StudySpec> file = ReadStudySpecFile(*spec_path);
    if (!file.ok()) return file.status();
    spec = *std::move(file);
  } else if (std::vector<std::string> missing = MissingFlags(
                 [this](absl::string_view name) { return Given(name); });
             !missing.empty()) {
    return absl::InvalidArgumentError(absl::StrJoin(missing, "\n"));
  }
  v1::ModelSpec* m = spec.mutable_model();
  if (model) {
    *m = v1::ModelSpec();
    m->set_preset(*model);
  }
  if (layers) m->set_layers(*layers);
  if (hidden) m->set_hidden(*hidden);
  if (heads) m->set_heads(*heads);
  if (kv_heads) m->set_kv_heads(*kv_heads);
  if (ffn_hidden) m->set_ffn_hidden(*ffn_hidden);
  if (vocab) m->set_vocab(*vocab);
  if (mlp) m->set_mlp(*mlp);
  if (tie_embeddings) m->set_tie_embeddings(*tie_embeddings);
  v1::ClusterSpec* c = spec.mutable_cluster();
  if (gpu) {
    *c->mutable_gpu() = v1::GpuSpec();
    c->mutable_gpu()->set_preset(*gpu);
  }
  if (nodes) c->set_nodes(*nodes);
  if (gpus_per_node) c->set_gpus_per_node(*gpus_per_node);
  if (intra_node_gbs) c->set_intra_node_gbs(*intra_node_gbs);
  if (inter_node_gbs) c->set_inter_node_gbs(*inter_node_gbs);
  if (inter_node_latency_us)
    c->set_inter_node_latency_us(*inter_node_latency_us);
  if (headroom) {
    TESSERA_RETURN_IF_ERROR(SetMemoryHeadroom(*headroom, c));
  }
  v1::TrainingSpec* t = spec.mutable_training();
  if (global_batch) t->set_global_batch(*global_batch);
  if (seq_len) t->set_seq_len(*seq_len);
  if (total_tokens) t->set_total_tokens(*total_tokens);
  if (stack) t->set_stack(*stack);
  if (stack_options) {
    t->clear_stack_options();
    for (absl::string_view o :
         absl::StrSplit(*stack_options, ',', absl::SkipWhitespace())) {
      t->add_stack_options(std::string(absl::StripAsciiWhitespace(o)));
    }
  }
  if (precision) t->set_precision(*precision);
  return spec;
}

absl::StatusOr<Study> WorkloadFlags::Resolve() const {
  Study study;
  absl::StatusOr<v1::StudySpec> spec = ToSpec();
  if (!spec.ok()) return spec.status();
  study.spec = *std::move(spec);
  absl::StatusOr<Workload> workload = CheckedWorkloadFromSpec(study.spec);
  if (!workload.ok()) return Attribute(*this, workload.status());
  study.workload = *std::move(workload);
  return study;
}

}  // namespace tessera::cli
