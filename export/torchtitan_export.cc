// The torchtitan export: a Python config function over Trainer.Config.
//
// Names, from pytorch/torchtitan at b5bcd76c66d0 (main, 2026-08-21):
// - torchtitan/config/README.md: a run is a Python function returning a
//   Trainer.Config, selected with --module/--config; the TOML job files and
//   the --job.config_file flag are gone, and the --section.option CLI flags
//   are frozen ("they will be deleted"), so the export is a config function.
// - torchtitan/config/configs.py, ParallelismConfig:
//   data_parallel_replicate_degree, data_parallel_shard_degree (HSDP when
//   both > 1; replicate only = DDP), fsdp_reshard_after_forward
//   ("default" | "always" | "never"), tensor_parallel_degree,
//   enable_sequence_parallel, pipeline_parallel_degree,
//   pipeline_parallel_schedule ("1F1B", "Interleaved1F1B"),
//   module_fqns_per_model_part, num_pp_microbatches,
//   context_parallel_degree.
// - torchtitan/config/configs.py, TrainingConfig:
//   num_tokens_per_microbatch_per_dp_rank, num_tokens_per_train_step,
//   max_context_length, mixed_precision_param, disable_cuda_graphs;
//   CompileConfig: enable, enable_async_tensor_parallel (needs enable).
// - torchtitan/trainer.py: gradient_accumulation_steps =
//   num_tokens_per_train_step / (num_tokens_per_microbatch_per_dp_rank *
//   num_pp_microbatches * dp); with pipeline parallelism all micro-batches
//   of a step go through one schedule (num_pp_microbatches = grad_accum,
//   gradient accumulation 1); CUDA graphs refuse pipeline parallelism
//   ("Set --training.disable_cuda_graphs").
// - torchtitan/distributed/pipeline_parallel.py: module_fqns_per_model_part
//   lists the modules of each stage ("tok_embeddings", "layers.N", "norm",
//   "lm_head"); loop schedules give rank r the stages r, r + pp, ...
// - torchtitan/distributed/fsdp.py: reshard_after_forward "default" is
//   True without pipeline parallelism and False with it; "never" keeps
//   parameters gathered from the forward to the backward (ZeRO-2-like).
// - torchtitan/distributed/activation_checkpoint.py: activation_checkpoint
//   = SelectiveAC.Config() (per-op), FullAC.Config(), or None.
// - torchtitan/components/quantization/float8.py: Float8LinearConverter.
//   Config(recipe_name "rowwise" | "rowwise_with_gw_hp", filter_fqns),
//   applied through model_registry(flavor, converters=[...]) in
//   torchtitan/models/llama3/__init__.py; the llama3_8b / llama3_70b /
//   llama3_405b recipes of torchtitan/models/llama3/config_registry.py.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "export/exporters.h"

namespace tessera::exporters {
namespace {

constexpr char kSource[] =
    "pytorch/torchtitan b5bcd76 (2026-08-21): torchtitan/config/configs.py, "
    "torchtitan/trainer.py";

struct Recipe {
  const char* model;     // Tessera's preset
  const char* function;  // torchtitan/models/llama3/config_registry.py
  const char* flavor;    // llama3_configs key (models/llama3/__init__.py)
};
constexpr Recipe kRecipes[] = {
    {"llama3-8b", "llama3_8b", "8B"},
    {"llama3-70b", "llama3_70b", "70B"},
    {"llama3-405b", "llama3_405b", "405B"},
};

const Recipe* FindRecipe(const std::string& model) {
  for (const Recipe& r : kRecipes) {
    if (model == r.model) return &r;
  }
  return nullptr;
}

const char* PyBool(bool b) { return b ? "True" : "False"; }

// The Python list of one model chunk's module names.
std::string ChunkModules(const ModelChunk& c, int64_t chunks, int64_t index) {
  std::string out;
  if (index == 0) out = "[\"tok_embeddings\"] + ";
  absl::StrAppend(&out, "[f\"layers.{i}\" for i in range(", c.begin, ", ",
                  c.end, ")]");
  if (index == chunks - 1) absl::StrAppend(&out, " + [\"norm\", \"lm_head\"]");
  return out;
}

// The file's head: how to run it, what it is for, and its imports.
void AppendHead(const ExportInput& in, const Recipe* recipe,
                std::string& out) {
  const Layout& l = in.layout;
  const Workload& w = in.workload;
  const bool fp8 = w.training.precision == Precision::kFp8;
  absl::StrAppend(
      &out,
      "# torchtitan configuration from Tessera. Put it in a module of your "
      "own and run\n# NGPU=",
      w.cluster.gpus_per_node,
      " MODULE=<that module> CONFIG=tessera_layout ./run_train.sh on each of "
      "the ",
      w.cluster.nodes,
      " node(s);\n# COMM_MODE=fake_backend NGPU=", w.cluster.world_size(),
      " checks it on one GPU (run_train.sh).\n");
  absl::StrAppend(&out, DescribeRun(in, "# "));
  absl::StrAppend(&out, "# Names: ", kSource, ".\n");
  absl::StrAppend(&out, NoteComments(TorchtitanNotes(in), "# "));

  // Imports, in isort order.
  if (fp8) {
    absl::StrAppend(&out,
                    "from torchtitan.components.quantization import "
                    "Float8LinearConverter\n");
  }
  if (l.recompute == Recompute::kSelective) {
    absl::StrAppend(&out,
                    "from torchtitan.distributed.activation_checkpoint "
                    "import SelectiveAC\n");
  } else if (l.recompute == Recompute::kFull) {
    absl::StrAppend(&out,
                    "from torchtitan.distributed.activation_checkpoint "
                    "import FullAC\n");
  }
  if (recipe != nullptr) {
    absl::StrAppend(&out,
                    "from torchtitan.models.llama3 import model_registry\n",
                    "from torchtitan.models.llama3.config_registry import ",
                    recipe->function, "\n");
  }
  absl::StrAppend(&out, "from torchtitan.trainer import Trainer\n\n\n");

}

// apply_tessera_layout's parallelism: data (DDP, FSDP, HSDP), tensor,
// sequence, context and pipeline, with the pipeline's model chunks.
void AppendParallelism(const ExportInput& in, std::string& out) {
  const Layout& l = in.layout;
  const Workload& w = in.workload;
  const std::string c = "    config.";
  // Data parallelism. Zero 0: replicate only (DDP); zero 2 and 3: FSDP
  // over shard_group ranks, replicated over dp / shard_group (HSDP).
  int64_t replicate = l.dp;
  int64_t shard = 1;
  const char* reshard = "default";
  if (l.zero >= 2) {
    shard = l.shard_group;
    replicate = l.dp / l.shard_group;
    if (l.zero == 2) reshard = "never";
  }
  absl::StrAppend(&out, "    # dp ", l.dp, ", zero ", l.zero,
                  l.zero == 0 ? ": DDP (replicate only)"
                  : l.zero == 2 || l.pp > 1
                      ? ": FSDP without resharding after forward (ZeRO-2-like)"
                      : ": FSDP (ZeRO-3)",
                  replicate > 1 && shard > 1 ? ", hybrid-sharded (HSDP)" : "",
                  "\n");
  absl::StrAppend(&out, c,
                  "parallelism.data_parallel_replicate_degree = ", replicate,
                  "\n");
  absl::StrAppend(&out, c, "parallelism.data_parallel_shard_degree = ", shard,
                  "\n");
  if (l.zero >= 2) {
    absl::StrAppend(&out, c, "parallelism.fsdp_reshard_after_forward = \"",
                    reshard, "\"\n");
  }
  absl::StrAppend(&out, c, "parallelism.tensor_parallel_degree = ", l.tp, "\n");
  absl::StrAppend(
      &out, c, "parallelism.enable_sequence_parallel = ", PyBool(l.sp), "\n");
  if (l.cp > 1) {
    absl::StrAppend(&out,
                    "    # torchtitan's FSDP shards over the shard x cp ranks "
                    "(distributed/fsdp.py\n    # resolve_fsdp_mesh), with "
                    "zero 0 too.\n");
  }
  absl::StrAppend(&out, c, "parallelism.context_parallel_degree = ", l.cp,
                  "\n");
  absl::StrAppend(&out, c, "parallelism.pipeline_parallel_degree = ", l.pp,
                  "\n");
  if (l.pp > 1) {
    absl::StrAppend(&out, c, "parallelism.pipeline_parallel_schedule = \"",
                    l.vpp > 1 ? "Interleaved1F1B" : "1F1B", "\"\n");
    absl::StrAppend(&out, c, "parallelism.num_pp_microbatches = ", l.grad_accum,
                    "\n");
    absl::StrAppend(&out,
                    "    # Model chunk m = v * pp + s is virtual stage v of "
                    "pipeline rank s.\n");
    absl::StrAppend(&out, c, "parallelism.module_fqns_per_model_part = [\n");
    const std::vector<ModelChunk> chunks = ModelChunks(l, w.model.layers);
    for (size_t i = 0; i < chunks.size(); ++i) {
      absl::StrAppend(
          &out, "        ",
          ChunkModules(chunks[i], static_cast<int64_t>(chunks.size()),
                       static_cast<int64_t>(i)),
          ",  # rank ", chunks[i].rank, ", virtual stage ", chunks[i].virt,
          "\n");
    }
    absl::StrAppend(&out, "    ]\n");
    absl::StrAppend(&out, c, "training.disable_cuda_graphs = True\n");
  }
}

// apply_tessera_layout's batch, precision, recomputation and compile.
void AppendTraining(const ExportInput& in, std::string& out) {
  const Layout& l = in.layout;
  const Workload& w = in.workload;
  const bool compile = in.OptionOn("compile");
  const bool async_tp = in.OptionOn("async-tp");
  const std::string c = "    config.";
  // Batch: one micro-batch is micro_batch packed rows of seq_len tokens.
  absl::StrAppend(&out, c, "training.max_context_length = ", w.training.seq_len,
                  "\n");
  absl::StrAppend(&out, c, "training.num_tokens_per_microbatch_per_dp_rank = ",
                  l.micro_batch * w.training.seq_len, "  # ", l.micro_batch,
                  " x ", w.training.seq_len, "\n");
  absl::StrAppend(&out, c, "training.num_tokens_per_train_step = ",
                  w.training.global_batch * w.training.seq_len, "  # ",
                  w.training.global_batch, " x ", w.training.seq_len,
                  l.pp > 1
                      ? ": one pipeline schedule per step"
                      : absl::StrCat(": gradient accumulation ", l.grad_accum),
                  "\n");
  absl::StrAppend(&out, c, "training.mixed_precision_param = \"bfloat16\"\n");
  switch (l.recompute) {
    case Recompute::kNone:
      absl::StrAppend(&out, c, "activation_checkpoint = None\n");
      break;
    case Recompute::kSelective:
      absl::StrAppend(&out, c,
                      "activation_checkpoint = SelectiveAC.Config()\n");
      break;
    case Recompute::kFull:
      absl::StrAppend(&out, c, "activation_checkpoint = FullAC.Config()\n");
      break;
  }
  absl::StrAppend(&out, c, "compile.enable = ", PyBool(compile), "\n");
  absl::StrAppend(&out, c, "compile.enable_async_tensor_parallel = ",
                  PyBool(async_tp && l.tp > 1), "\n");
}

// tessera_layout(): the recipe's config with the model (float8 on its linear
// layers for fp8) and the layout applied; a comment where torchtitan has no
// recipe for the model.
void AppendModel(const ExportInput& in, const Recipe* recipe,
                 std::string& out) {
  const Workload& w = in.workload;
  const bool fp8 = w.training.precision == Precision::kFp8;
  const bool compile = in.OptionOn("compile");
  // The model, and float8 on its linear layers: rowwise is the only float8
  // recipe at b5bcd76 besides rowwise_with_gw_hp; the output projection
  // stays bf16 as in the llama3_405b recipe.
  std::string fp8_note;
  std::string converters;
  if (fp8) {
    if (!in.OptionOn("float8-rowwise")) {
      fp8_note =
          "    # The plan assumed float8 tensorwise scaling; torchtitan "
          "b5bcd76 has rowwise\n    # (per-row scales, slower GEMMs) and "
          "rowwise_with_gw_hp only.\n";
    }
    converters = absl::StrCat(
        ",\n        converters=[\n"
        "            Float8LinearConverter.Config(\n"
        "                recipe_name=\"rowwise\",\n"
        "                filter_fqns=[\"lm_head\"],\n"
        "                model_compile_enabled=",
        PyBool(compile), ",\n            ),\n        ],\n    ");
  }
  if (recipe != nullptr) {
    absl::StrAppend(&out, "\n\ndef tessera_layout() -> Trainer.Config:\n");
    absl::StrAppend(&out, "    config = ", recipe->function, "()\n");
    absl::StrAppend(&out, fp8_note);
    absl::StrAppend(&out, "    config.model_spec = model_registry(",
                    fp8 ? "\n        " : "", "\"", recipe->flavor, "\"",
                    converters, ")\n");
    absl::StrAppend(&out, "    return apply_tessera_layout(config)\n");
  } else {
    absl::StrAppend(&out, "\n\n# torchtitan b5bcd76 has no recipe for '",
                    w.model.name,
                    "': return apply_tessera_layout(config) from your own "
                    "config function\n# over a Trainer.Config of this model "
                    "(its dimensions are above).\n");
    if (fp8) {
      absl::StrAppend(&out,
                      "# fp8: set its model_spec to model_registry(FLAVOR, "
                      "converters=[Float8LinearConverter.Config(\n"
                      "#     recipe_name=\"rowwise\", "
                      "filter_fqns=[\"lm_head\"], model_compile_enabled=",
                      PyBool(compile), ")]).\n");
    }
  }
}

}  // namespace

std::vector<std::string> TorchtitanNotes(const ExportInput& in) {
  std::vector<std::string> notes;
  if (in.layout.zero >= 2 && in.layout.pp > 1) {
    notes.push_back(
        "with pipeline parallelism torchtitan's fsdp_reshard_after_forward "
        "\"default\" keeps each stage's parameters gathered from the forward "
        "to the backward (no reshard, torchtitan/distributed/fsdp.py), as "
        "this plan assumed: \"always\" would save memory and all-gather "
        "again for every micro-batch.");
  }
  notes.push_back(
      "the recipe's dataset, tokenizer, steps and checkpointing are its own: "
      "set config.dataloader, config.tokenizer, config.training.steps and "
      "config.checkpoint as your run needs.");
  return notes;
}

absl::StatusOr<std::string> ExportTorchtitan(const ExportInput& in) {
  const bool compile = in.OptionOn("compile");
  const bool async_tp = in.OptionOn("async-tp");
  if (in.OptionOn("selective-layer")) {
    return CannotExpress(
        "training.stack_options",
        "torchtitan b5bcd76 has no per-layer selective checkpointing "
        "(selective-layer was activation_checkpoint.selective_ac_option, "
        "removed in 2026-03); not exported to torchtitan: turn it off "
        "with no-selective-layer");
  }
  if (async_tp && !compile) {
    return CannotExpress(
        "training.stack_options",
        "torchtitan's async-tp needs compile "
        "(compile.enable_async_tensor_parallel requires compile.enable); "
        "not exported to torchtitan");
  }

  const Recipe* recipe = FindRecipe(in.workload.model.name);
  std::string out;
  AppendHead(in, recipe, out);
  absl::StrAppend(
      &out,
      "def apply_tessera_layout(config: Trainer.Config) -> Trainer.Config:\n");
  AppendParallelism(in, out);
  AppendTraining(in, out);
  absl::StrAppend(&out, "    return config\n");
  AppendModel(in, recipe, out);
  return out;
}

}  // namespace tessera::exporters
