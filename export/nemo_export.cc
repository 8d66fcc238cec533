// The NeMo export: a Megatron-Bridge recipe function (NeMo framework's LLM
// training on Megatron-Core; NeMo 2's nemo.collections.llm recipes moved
// there) that sets the layout on a ConfigContainer, the way Bridge's own
// recipes do (cfg.model.tensor_model_parallel_size = ...). Python rather
// than run_recipe.py's KEY=VALUE overrides: those go through OmegaConf in
// struct mode, where the llama recipes' model config (a builder-backed
// GPTModelConfig) nests these fields under model.transformer and
// mixed_precision is a string, while attribute assignment is proxied.
//
// Names, from NVIDIA-NeMo/Megatron-Bridge at 067f987df03b (main,
// 2026-08-22):
// - src/megatron/bridge/training/config.py ConfigContainer: model, train
//   (micro_batch_size, global_batch_size), dataset (seq_length), ddp
//   (Megatron-Core DistributedDataParallelConfig: use_distributed_optimizer,
//   use_megatron_fsdp, data_parallel_sharding_strategy,
//   num_distributed_optimizer_instances, overlap_grad_reduce,
//   overlap_param_gather), optimizer (use_distributed_optimizer,
//   overlap_param_gather: kept in sync with ddp's, either True makes both
//   True), checkpoint (ckpt_format "fsdp_dtensor", required by Megatron
//   FSDP), mixed_precision, comm_overlap.
// - the model fields are Megatron-Core TransformerConfig's (NVIDIA/
//   Megatron-LM d98e8a6 megatron/core/model_parallel_config.py and
//   transformer/transformer_config.py): tensor_model_parallel_size,
//   sequence_parallel, pipeline_model_parallel_size,
//   virtual_pipeline_model_parallel_size, pipeline_model_parallel_layout,
//   num_layers_in_first/last_pipeline_stage,
//   account_for_embedding/loss_in_pipeline_split, context_parallel_size,
//   recompute_granularity, recompute_method, recompute_num_layers,
//   recompute_modules; seq_length is the GPT model config's.
// - src/megatron/bridge/training/mixed_precision.py:
//   get_mixed_precision_config("bf16_mixed" |
//   "bf16_with_fp8_delayed_scaling_mixed"), grad_reduce_in_fp32,
//   fp8_param_gather (the fp8 preset turns it on); applied to the model,
//   optimizer and ddp configs at setup.
// - src/megatron/bridge/training/comm_overlap.py CommOverlapConfig
//   (tp_comm_overlap, overlap_p2p_comm, batch_p2p_comm,
//   overlap_grad_reduce, overlap_param_gather): its values override the
//   defaults it derives.
// - src/megatron/bridge/recipes/llama/h100/llama3.py and llama2.py: the base
//   recipes; README.md: pretrain(cfg, forward_step) under torchrun.
#include <string>

#include "absl/strings/str_cat.h"
#include "export/exporters.h"

namespace tessera::exporters {
namespace {

constexpr char kSource[] =
    "NVIDIA-NeMo/Megatron-Bridge 067f987 (2026-08-22): src/megatron/bridge/"
    "training/config.py, mixed_precision.py, comm_overlap.py";

struct Recipe {
  const char* model;   // Tessera's preset
  const char* module;  // under megatron.bridge.recipes
  const char* function;
};
constexpr Recipe kRecipes[] = {
    {"llama3-8b", "llama.h100.llama3",
     "llama3_8b_pretrain_2gpu_h100_bf16_config"},
    {"llama3-70b", "llama.h100.llama3",
     "llama3_70b_pretrain_32gpu_h100_bf16_config"},
    {"llama3-405b", "llama.h100.llama3",
     "llama31_405b_pretrain_256gpu_h100_bf16_config"},
    {"llama2-7b", "llama.h100.llama2",
     "llama2_7b_pretrain_2gpu_h100_bf16_config"},
};

const Recipe* FindRecipe(const std::string& model) {
  for (const Recipe& r : kRecipes) {
    if (model == r.model) return &r;
  }
  return nullptr;
}

const char* PyBool(bool b) { return b ? "True" : "False"; }

// Writes apply_tessera_layout's "    cfg.FIELD = VALUE" lines.
struct CfgLines {
  std::string& out;
  template <typename T>
  void Set(absl::string_view field, const T& value) {
    absl::StrAppend(&out, "    cfg.", field, " = ", value, "\n");
  }
};

std::string Quoted(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

// The file's head: how to run it, what it is for, and its imports.
void AppendHead(const ExportInput& in, const Recipe* recipe,
                std::string& out) {
  const Workload& w = in.workload;
  absl::StrAppend(
      &out,
      "# Megatron-Bridge (NeMo framework) configuration from Tessera. Run "
      "this file with\n# torchrun --nproc-per-node=",
      w.cluster.gpus_per_node, " --nnodes=", w.cluster.nodes,
      " (Megatron-Bridge README.md: pretrain(cfg, forward_step)).\n");
  absl::StrAppend(&out, DescribeRun(in, "# "));
  absl::StrAppend(&out, "# Names: ", kSource, ".\n");
  absl::StrAppend(&out, NoteComments(NemoNotes(in), "# "));
  if (recipe != nullptr) {
    absl::StrAppend(&out, "from megatron.bridge.recipes.", recipe->module,
                    " import ", recipe->function, "\n");
  }
  absl::StrAppend(
      &out,
      "from megatron.bridge.training.comm_overlap import CommOverlapConfig\n"
      "from megatron.bridge.training.config import ConfigContainer\n"
      "from megatron.bridge.training.mixed_precision import "
      "get_mixed_precision_config\n\n\n");
}

// Tensor, sequence, pipeline (with Tessera's chunk sizes where they are not
// even) and context parallelism.
void AppendModelParallelism(const ExportInput& in, CfgLines c) {
  const Layout& l = in.layout;
  const ModelConfig& m = in.workload.model;
  std::string& out = c.out;
  c.Set("model.tensor_model_parallel_size", l.tp);
  c.Set("model.sequence_parallel", PyBool(l.sp));
  c.Set("model.pipeline_model_parallel_size", l.pp);
  const bool layout_string = l.pp > 1 && !EvenChunks(l, m.layers);
  if (layout_string) {
    absl::StrAppend(&out,
                    "    # model chunks of Tessera's sizes (first and "
                    "last hold the embedding and the loss)\n");
  }
  c.Set("model.pipeline_model_parallel_layout",
      layout_string ? Quoted(MegatronPipelineLayout(l, m.layers)) : "None");
  c.Set("model.virtual_pipeline_model_parallel_size",
      l.vpp > 1 ? absl::StrCat(l.vpp) : "None");
  c.Set("model.num_layers_in_first_pipeline_stage", "None");
  c.Set("model.num_layers_in_last_pipeline_stage", "None");
  c.Set("model.account_for_embedding_in_pipeline_split", "False");
  c.Set("model.account_for_loss_in_pipeline_split", "False");
  c.Set("model.context_parallel_size", l.cp);

}

// DDP, the distributed optimizer or Megatron FSDP, with HSDP's replicas.
void AppendDataParallelism(const ExportInput& in, CfgLines c) {
  const Layout& l = in.layout;
  std::string& out = c.out;
  const int64_t replicas = l.replicas();
  absl::StrAppend(
      &out, "    # dp ", l.dp, ", zero ", l.zero,
      l.zero == 0   ? ": DDP"
      : l.zero == 1 ? ": distributed optimizer"
      : l.zero == 2 ? ": Megatron FSDP, optimizer and gradients"
                    : ": Megatron FSDP, optimizer, gradients and "
                      "parameters",
      l.zero >= 1 && replicas > 1
          ? absl::StrCat(", HSDP: ", replicas, " replicas of ", l.shard_group)
          : "",
      "\n");
  c.Set("ddp.use_distributed_optimizer", PyBool(l.zero >= 1));
  c.Set("optimizer.use_distributed_optimizer", PyBool(l.zero >= 1));
  c.Set("ddp.use_megatron_fsdp", PyBool(l.zero >= 2));
  c.Set("ddp.data_parallel_sharding_strategy",
      Quoted(l.zero == 3   ? "optim_grads_params"
             : l.zero == 2 ? "optim_grads"
                           : "no_shard"));
  c.Set("ddp.num_distributed_optimizer_instances",
      l.zero >= 1 ? replicas : int64_t{1});
  if (l.zero >= 2) c.Set("checkpoint.ckpt_format", Quoted("fsdp_dtensor"));

}

// The batch, and what is recomputed.
void AppendBatchAndRecompute(const ExportInput& in, CfgLines c) {
  const Layout& l = in.layout;
  const Workload& w = in.workload;
  c.Set("train.micro_batch_size", l.micro_batch);
  c.Set("train.global_batch_size", w.training.global_batch);
  c.Set("dataset.seq_length", w.training.seq_len);
  c.Set("model.seq_length", w.training.seq_len);

  // Recomputation.
  switch (l.recompute) {
    case Recompute::kNone:
      c.Set("model.recompute_granularity", "None");
      c.Set("model.recompute_modules", "None");
      c.Set("model.recompute_method", "None");
      c.Set("model.recompute_num_layers", "None");
      break;
    case Recompute::kSelective:
      c.Set("model.recompute_granularity", Quoted("selective"));
      c.Set("model.recompute_modules", "[\"core_attn\"]");
      c.Set("model.recompute_method", "None");
      c.Set("model.recompute_num_layers", "None");
      break;
    case Recompute::kFull:
      c.Set("model.recompute_granularity", Quoted("full"));
      c.Set("model.recompute_modules", "None");
      c.Set("model.recompute_method", Quoted("uniform"));
      c.Set("model.recompute_num_layers", 1);
      break;
  }

}

// Mixed precision, and the stack's communication overlaps that are on.
void AppendPrecisionAndOverlap(const ExportInput& in, CfgLines c) {
  const Layout& l = in.layout;
  const bool fp8 = in.workload.training.precision == Precision::kFp8;
  const bool fp8_param_gather = fp8 && in.OptionOn("fp8-param-gather");
  c.Set("mixed_precision",
      absl::StrCat(
          "get_mixed_precision_config(",
          Quoted(fp8 ? "bf16_with_fp8_delayed_scaling_mixed" : "bf16_mixed"),
          ")"));
  c.Set("mixed_precision.grad_reduce_in_fp32",
      PyBool(!in.OptionOn("grad-reduce-bf16")));
  if (fp8) c.Set("mixed_precision.fp8_param_gather", PyBool(fp8_param_gather));

  // Communication overlap: the stack's options that are on.
  const bool tp_overlap = in.OptionOn("tp-comm-overlap") && l.tp > 1 && l.sp;
  const bool grad_overlap = in.OptionOn("overlap-grad-reduce") && l.dp > 1;
  const bool param_overlap = grad_overlap && l.zero >= 1;
  const bool p2p_overlap =
      in.OptionOn("overlap-p2p-comm") && l.pp > 1 && l.vpp > 1;
  c.Set("comm_overlap",
      absl::StrCat(
          "CommOverlapConfig(\n        tp_comm_overlap=", PyBool(tp_overlap),
          ",\n        overlap_p2p_comm=", PyBool(p2p_overlap),
          ",\n        batch_p2p_comm=", PyBool(l.pp > 1 && !p2p_overlap),
          ",\n        overlap_grad_reduce=", PyBool(grad_overlap),
          ",\n        overlap_param_gather=", PyBool(param_overlap),
          ",\n    )"));
  c.Set("ddp.overlap_grad_reduce", PyBool(grad_overlap));
  c.Set("ddp.overlap_param_gather", PyBool(param_overlap));
  c.Set("optimizer.overlap_param_gather", PyBool(param_overlap));
}

// tessera_layout() over the recipe and the pretrain entry point, or a
// comment where Megatron-Bridge has no recipe for the model.
void AppendEntry(const ExportInput& in, const Recipe* recipe,
                 std::string& out) {
  const ModelConfig& m = in.workload.model;
  if (recipe != nullptr) {
    absl::StrAppend(&out, "\n\ndef tessera_layout() -> ConfigContainer:\n",
                    "    return apply_tessera_layout(", recipe->function,
                    "())\n");
    absl::StrAppend(
        &out,
        "\n\nif __name__ == \"__main__\":\n"
        "    from megatron.bridge.training.gpt_step import forward_step\n"
        "    from megatron.bridge.training.pretrain import pretrain\n\n"
        "    pretrain(tessera_layout(), forward_step)\n");
  } else {
    absl::StrAppend(&out, "\n\n# Megatron-Bridge 067f987 has no recipe for '",
                    m.name,
                    "': apply_tessera_layout(cfg) to a ConfigContainer of "
                    "this model\n# (its dimensions are above).\n");
  }
}

}  // namespace

std::vector<std::string> NemoNotes(const ExportInput& in) {
  const Layout& l = in.layout;
  std::vector<std::string> notes;
  if (l.zero >= 2) {
    notes.push_back(
        "leave CUDA_DEVICE_MAX_CONNECTIONS unset (or above 1): with Megatron "
        "FSDP (ddp.use_megatron_fsdp) Megatron-Bridge refuses to start when "
        "it is 1 (src/megatron/bridge/training/config.py).");
  } else if ((l.tp > 1 || l.cp > 1) && BeforeBlackwell(in.workload)) {
    notes.push_back(
        "export CUDA_DEVICE_MAX_CONNECTIONS=1 before launching: "
        "Megatron-Core's "
        "tensor-parallel layers rely on it to start each all-gather before "
        "the GEMM it overlaps on GPUs before Blackwell "
        "(megatron/core/tensor_parallel/layers.py; Megatron-LM refuses to "
        "start without it, Megatron-Bridge does not check).");
  }
  notes.push_back(
      "the recipe's data, tokenizer, training length and checkpoints are "
      "its own: set them on cfg.dataset, cfg.tokenizer, cfg.train and "
      "cfg.checkpoint.");
  return notes;
}

absl::StatusOr<std::string> ExportNemo(const ExportInput& in) {
  const Layout& l = in.layout;
  const Workload& w = in.workload;
  const bool fp8 = w.training.precision == Precision::kFp8;
  const bool fp8_param_gather = fp8 && in.OptionOn("fp8-param-gather");
  if (fp8_param_gather && l.zero == 0) {
    return CannotExpress(
        "training.stack_options",
        "Megatron-Core's fp8_param_gather needs the distributed optimizer or "
        "Megatron FSDP (zero >= 1), not zero 0; not exported to nemo");
  }
  const Recipe* recipe = FindRecipe(w.model.name);
  std::string out;
  AppendHead(in, recipe, out);
  absl::StrAppend(
      &out,
      "def apply_tessera_layout(cfg: ConfigContainer) -> ConfigContainer:\n");
  const CfgLines c{out};
  AppendModelParallelism(in, c);
  AppendDataParallelism(in, c);
  AppendBatchAndRecompute(in, c);
  AppendPrecisionAndOverlap(in, c);
  absl::StrAppend(&out, "    return cfg\n");
  AppendEntry(in, recipe, out);
  return out;
}

}  // namespace tessera::exporters
