// The Megatron-LM export: command-line arguments of pretrain_gpt.py, one
// per line, ready to paste into a bash array (its "#" lines are comments
// there).
//
// Names, from NVIDIA/Megatron-LM at d98e8a64ddf3 (main, 2026-08-22):
// - megatron/training/argument_utils.py: ArgumentGroupFactory makes one
//   flag per dataclass field, "--" + name with "_" -> "-"; a bool that
//   defaults to False is a store_true flag. megatron/training/arguments.py
//   _add_network_size_args builds them from TransformerConfig, whose
//   fields include ModelParallelConfig's (megatron/core/
//   model_parallel_config.py): --tensor-model-parallel-size,
//   --sequence-parallel, --pipeline-model-parallel-size,
//   --context-parallel-size, --tp-comm-overlap, --bf16; and
//   megatron/core/transformer/transformer_config.py's: --num-layers,
//   --hidden-size, --num-attention-heads, --num-query-groups,
//   --ffn-hidden-size, --normalization, --norm-epsilon (layernorm_epsilon),
//   --disable-bias-linear (add_bias_linear), --recompute-granularity
//   (full | selective), --recompute-method (uniform | block),
//   --recompute-num-layers, --recompute-modules (default core_attn),
//   --fp8-format (e4m3 | hybrid; fp8_recipe defaults to delayed).
// - arguments.py, by hand: --group-query-attention, --swiglu,
//   --position-embedding-type rope, --rotary-base,
//   --max-position-embeddings, --untie-embeddings-and-output-weights,
//   --seq-length, --grad-reduce-in-bf16, --fp8-param-gather,
//   --num-layers-per-virtual-pipeline-stage,
//   --pipeline-model-parallel-layout ("E|(t|)*3,m|m||L": E embedding, t a
//   layer, L the loss, "|" between stages in virtual-stage-major order,
//   core/transformer/pipeline_parallel_layer_layout.py), --overlap-grad-
//   reduce, --overlap-param-gather (needs the distributed optimizer or
//   Megatron FSDP), --no-overlap-p2p-communication, --use-distributed-
//   optimizer, --data-parallel-sharding-strategy (no_shard | optim |
//   optim_grads | optim_grads_params), --num-distributed-optimizer-instances
//   (HSDP: core/distributed/fsdp/mcore_fsdp_adapter.py enables it when > 1);
//   --use-megatron-fsdp (megatron/training/config/common_config.py
//   DistributedInitConfig), which needs --ckpt-format fsdp_dtensor
//   (training_config.py ckpt_format) and --tp-comm-overlap needs
//   --sequence-parallel (validate_args).
// - arguments.py validate_args, the environment: with tensor or context
//   parallelism on GPUs before Blackwell (get_device_arch_version() < 10) it
//   asserts CUDA_DEVICE_MAX_CONNECTIONS == "1", unless Megatron-FSDP is on,
//   which asserts it is not "1" and warns ("Using tensor model parallelism
//   or context parallelism with Megatron-FSDP together. Try not to using
//   them together ...").
// - megatron/training/config/training_config.py: --micro-batch-size,
//   --global-batch-size (micro-batches per step = global / (micro * dp)).
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "export/exporters.h"

namespace tessera::exporters {
namespace {

constexpr char kSource[] =
    "NVIDIA/Megatron-LM d98e8a6 (2026-08-22): megatron/training/"
    "arguments.py, megatron/core/transformer/transformer_config.py";

// "t", "t*7" or "" for a chunk of n layers.
std::string Layers(int64_t n) {
  if (n == 0) return "";
  if (n == 1) return "t";
  return absl::StrCat("t*", n);
}

}  // namespace

// The --pipeline-model-parallel-layout of Tessera's chunks (StageLayers):
// the embedding with the first chunk, the loss with the last.
std::string MegatronPipelineLayout(const Layout& layout, int64_t layers) {
  const std::vector<ModelChunk> chunks = ModelChunks(layout, layers);
  std::string out;
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (i > 0) out += "|";
    if (i == 0) out += "E";
    out += Layers(chunks[i].end - chunks[i].begin);
    if (i == chunks.size() - 1) out += "L";
  }
  return out;
}

std::vector<std::string> MegatronNotes(const ExportInput& in) {
  const Layout& l = in.layout;
  const bool model_parallel = l.tp > 1 || l.cp > 1;
  const bool fsdp = l.zero >= 2;
  const bool old_gpus = BeforeBlackwell(in.workload);
  std::vector<std::string> notes;
  if (model_parallel && old_gpus && !fsdp) {
    notes.push_back(
        "export CUDA_DEVICE_MAX_CONNECTIONS=1 before launching: with tensor "
        "or context parallelism on GPUs before Blackwell, Megatron-LM's "
        "validate_args refuses to start without it (megatron/training/"
        "arguments.py).");
  }
  if (fsdp) {
    notes.push_back(
        "leave CUDA_DEVICE_MAX_CONNECTIONS unset (or above 1): Megatron-FSDP "
        "(--use-megatron-fsdp) refuses to start when it is 1 "
        "(megatron/training/arguments.py).");
  }
  if (fsdp && model_parallel && old_gpus) {
    notes.push_back(absl::StrCat(
        "Megatron-LM warns against this layout at start-up: ",
        l.tp > 1 ? "tensor" : "context",
        " parallelism with Megatron-FSDP before Blackwell (sequence "
        "parallelism wants CUDA_DEVICE_MAX_CONNECTIONS=1, Megatron-FSDP more "
        "connections); a layout with zero <= 1 avoids it (tessera plan "
        "--top 0 lists them, tessera predict prices one)."));
  }
  notes.push_back(
      "the file sets the layout, the model and the batch only: add your data "
      "(--data-path), tokenizer (--tokenizer-type, --tokenizer-model), "
      "--train-iters and the optimizer's learning rate.");
  return notes;
}

absl::StatusOr<std::string> ExportMegatron(const ExportInput& in) {
  const Layout& l = in.layout;
  const Workload& w = in.workload;
  const ModelConfig& m = w.model;
  const bool fp8 = w.training.precision == Precision::kFp8;
  if (fp8 && in.OptionOn("fp8-param-gather") && l.zero == 0) {
    return CannotExpress(
        "training.stack_options",
        "Megatron-LM's --fp8-param-gather needs the distributed optimizer "
        "or Megatron FSDP (zero >= 1), not zero 0; not exported to "
        "megatron");
  }
  std::string out;
  absl::StrAppend(&out,
                  "# Megatron-LM arguments from Tessera (pretrain_gpt.py; "
                  "paste into a bash array)\n");
  absl::StrAppend(&out, DescribeRun(in, "# "));
  absl::StrAppend(&out, "# Names: ", kSource, ".\n");
  absl::StrAppend(&out, NoteComments(MegatronNotes(in), "# "));
  auto arg = [&out](absl::string_view name, const auto& value) {
    absl::StrAppend(&out, name, " ", value, "\n");
  };
  auto flag = [&out](absl::string_view name) {
    absl::StrAppend(&out, name, "\n");
  };

  // Model parallelism.
  arg("--tensor-model-parallel-size", l.tp);
  if (l.sp) flag("--sequence-parallel");
  arg("--pipeline-model-parallel-size", l.pp);
  if (l.pp > 1 && !EvenChunks(l, m.layers)) {
    absl::StrAppend(&out,
                    "# model chunks of Tessera's sizes (first and last "
                    "hold the embedding and the loss)\n");
    arg("--pipeline-model-parallel-layout",
        absl::StrCat("'", MegatronPipelineLayout(l, m.layers), "'"));
  } else if (l.vpp > 1) {
    arg("--num-layers-per-virtual-pipeline-stage", m.layers / (l.pp * l.vpp));
  }
  arg("--context-parallel-size", l.cp);

  // Data parallelism: dp = world / (tp * pp * cp).
  const int64_t replicas = l.replicas();
  if (l.zero >= 1) flag("--use-distributed-optimizer");
  if (l.zero >= 2) {
    flag("--use-megatron-fsdp");
    arg("--data-parallel-sharding-strategy",
        l.zero == 2 ? "optim_grads" : "optim_grads_params");
    arg("--ckpt-format", "fsdp_dtensor");
  }
  if (l.zero >= 1 && replicas > 1) {
    absl::StrAppend(&out, "# HSDP: sharded within ", l.shard_group,
                    " data-parallel ranks, ", replicas, " replicas\n");
    arg("--num-distributed-optimizer-instances", replicas);
  }

  // Batch.
  arg("--micro-batch-size", l.micro_batch);
  arg("--global-batch-size", w.training.global_batch);
  arg("--seq-length", w.training.seq_len);
  arg("--max-position-embeddings", w.training.seq_len);

  // Model.
  arg("--num-layers", m.layers);
  arg("--hidden-size", m.hidden);
  arg("--ffn-hidden-size", m.ffn_hidden);
  arg("--num-attention-heads", m.heads);
  if (m.kv_heads < m.heads) {
    flag("--group-query-attention");
    arg("--num-query-groups", m.kv_heads);
  }
  if (m.mlp == MlpKind::kSwiGlu) {
    flag("--swiglu");
    arg("--normalization", "RMSNorm");
    arg("--norm-epsilon", m.norm_eps);
    arg("--position-embedding-type", "rope");
    arg("--rotary-base", static_cast<int64_t>(std::llround(m.rope_theta)));
    flag("--disable-bias-linear");
  }
  if (!m.tie_embeddings) flag("--untie-embeddings-and-output-weights");
  absl::StrAppend(&out, "# vocabulary ", m.vocab, ": from your tokenizer\n");

  // Recomputation.
  if (l.recompute == Recompute::kSelective) {
    arg("--recompute-granularity", "selective");
    arg("--recompute-modules", "core_attn");
  } else if (l.recompute == Recompute::kFull) {
    arg("--recompute-granularity", "full");
    arg("--recompute-method", "uniform");
    arg("--recompute-num-layers", 1);
  }

  // Precision.
  flag("--bf16");
  if (fp8) {
    arg("--fp8-format", "hybrid");
    if (in.OptionOn("fp8-param-gather")) flag("--fp8-param-gather");
  }

  // The stack's options that are on.
  if (in.OptionOn("tp-comm-overlap") && l.tp > 1 && l.sp) {
    flag("--tp-comm-overlap");
  }
  if (in.OptionOn("overlap-grad-reduce") && l.dp > 1) {
    flag("--overlap-grad-reduce");
    if (l.zero >= 1) flag("--overlap-param-gather");
  }
  if (!in.OptionOn("overlap-p2p-comm") && l.pp > 1 && l.vpp > 1) {
    flag("--no-overlap-p2p-communication");
  }
  if (in.OptionOn("grad-reduce-bf16")) flag("--grad-reduce-in-bf16");
  return out;
}

}  // namespace tessera::exporters
