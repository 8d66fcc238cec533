// Exports of a layout as each framework's configuration
// (export/layout_export.h): every field by the name and value rule
// of the framework's source at the commit its exporter cites, and each
// refusal with the field named.
//   torchtitan  pytorch/torchtitan b5bcd76 (2026-08-21)
//   megatron    NVIDIA/Megatron-LM d98e8a6 (2026-08-22)
//   deepspeed   deepspeedai/DeepSpeed edaa722 (2026-08-22)
//   nemo        NVIDIA-NeMo/Megatron-Bridge 067f987 (2026-08-22)
#include "export/layout_export.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "costmodel/stacks/training_stack.h"

namespace tessera::exporters {
namespace {

// 2 nodes x 8 H100s, a global batch of 32 sequences of 8192 tokens.
Workload MakeWorkload(const std::string& model = "llama3-8b",
                      Precision precision = Precision::kBf16,
                      const std::string& stack = "megatron-core",
                      std::vector<std::string> options = {}) {
  Workload w{*ModelPreset(model), MakeCluster(*GpuPreset("h100-sxm"), 2, 8),
             TrainingConfig{.global_batch = 32, .seq_len = 8192}};
  w.training.precision = precision;
  w.training.stack = stack;
  w.training.stack_options = std::move(options);
  return w;
}

Layout L(const std::string& text) {
  absl::StatusOr<Layout> l = ParseLayout(text);
  EXPECT_TRUE(l.ok()) << l.status();
  return *l;
}

// The brief's example: tp=2 with sp, pp=2 vpp=2, cp=1, dp=4 (16 GPUs),
// ZeRO-1, micro-batch 1, grad-accum 8 (1 x 4 x 8 = 32), selective.
constexpr char kExample[] =
    "tp=2,sp=1,pp=2,vpp=2,cp=1,zero=1,micro_batch=1,grad_accum=8,"
    "recompute=selective";

std::string Export(const Workload& w, const Layout& l, ExportTarget t) {
  absl::StatusOr<std::string> text = ExportLayout(w, l, t);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The lines of the Python function `def name(` up to its return.
std::vector<std::string> FunctionBody(const std::string& text,
                                      const std::string& name) {
  std::vector<std::string> body;
  bool in = false;
  for (const std::string& line : Lines(text)) {
    if (line.rfind("def " + name + "(", 0) == 0) {
      in = true;
      continue;
    }
    if (!in) continue;
    body.push_back(line);
    if (line.rfind("    return ", 0) == 0) break;
  }
  return body;
}

bool Has(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

// Lines that start with `prefix`.
int CountPrefix(const std::vector<std::string>& lines,
                const std::string& prefix) {
  return static_cast<int>(std::count_if(
      lines.begin(), lines.end(),
      [&](const std::string& s) { return s.rfind(prefix, 0) == 0; }));
}

// The value of `config.<field> = VALUE` in a torchtitan body (without a
// trailing comment), "" when absent.
std::string PyValue(const std::vector<std::string>& body,
                    const std::string& assignee) {
  const std::string prefix = "    " + assignee + " = ";
  for (const std::string& line : body) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::string value = line.substr(prefix.size());
    const size_t hash = value.find("  #");
    if (hash != std::string::npos) value.resize(hash);
    return value;
  }
  return "";
}

// Megatron-LM arguments: flag -> value ("" for a store_true flag); the
// "#" lines are comments.
std::map<std::string, std::string> MegatronArgs(const std::string& text) {
  std::map<std::string, std::string> args;
  for (const std::string& line : Lines(text)) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_EQ(line.rfind("--", 0), 0u) << line;
    const size_t space = line.find(' ');
    const std::string flag = line.substr(0, space);
    EXPECT_EQ(args.count(flag), 0u) << "twice: " << flag;
    args[flag] = space == std::string::npos ? "" : line.substr(space + 1);
  }
  return args;
}

void ExpectRefused(const absl::StatusOr<std::string>& text,
                   absl::StatusCode code, const std::string& message) {
  ASSERT_FALSE(text.ok()) << *text;
  EXPECT_EQ(text.status().code(), code) << text.status();
  EXPECT_EQ(std::string(text.status().message()), message);
}

// Megatron-Core's layout string unrolled as
// pipeline_parallel_layer_layout.py parse_str_to_list does: the layers of
// each stage, and whether the embedding leads and the loss ends it.
std::vector<int> UnrollLayout(std::string layout, bool* ends_ok) {
  layout = std::regex_replace(layout, std::regex(","), "");
  std::smatch m;
  const std::regex times(R"((.)\*(\d+))");
  while (std::regex_search(layout, m, times)) {
    layout = m.prefix().str() +
             std::string(std::stoi(m[2].str()), m[1].str()[0]) +
             m.suffix().str();
  }
  *ends_ok = !layout.empty() && layout.front() == 'E' && layout.back() == 'L';
  std::vector<int> stages;
  std::istringstream in(layout);
  for (std::string stage; std::getline(in, stage, '|');) {
    stages.push_back(
        static_cast<int>(std::count(stage.begin(), stage.end(), 't')));
  }
  return stages;
}

TEST(LayoutExportTest, ParsesTargetsAndNamesTheirStacks) {
  for (ExportTarget t : {ExportTarget::kTorchtitan, ExportTarget::kMegatron,
                         ExportTarget::kDeepSpeed, ExportTarget::kNemo}) {
    absl::StatusOr<ExportTarget> back = ParseExportTarget(ExportTargetName(t));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, t);
    EXPECT_TRUE(costmodel::FindStack(ExportTargetStack(t)).ok()) << ExportTargetStack(t);
  }
  EXPECT_EQ(ExportTargetStack(ExportTarget::kTorchtitan), "torchtitan");
  EXPECT_EQ(ExportTargetStack(ExportTarget::kMegatron), "megatron-core");
  EXPECT_EQ(ExportTargetStack(ExportTarget::kNemo), "megatron-core");
  EXPECT_EQ(ExportTargetStack(ExportTarget::kDeepSpeed), "deepspeed");
  const absl::Status bad = ParseExportTarget("jax").status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(bad.message()),
            "--export: 'jax' is not torchtitan, megatron, deepspeed or nemo");
  // Case is folded (issue 30): "Megatron" is megatron.
  EXPECT_EQ(*ParseExportTarget("Megatron"), ExportTarget::kMegatron);
}

// The target whose text is a stack's own configuration (what a command
// trial's {config} gets), and the file each is written to.
TEST(LayoutExportTest, EachStacksOwnFormatAndItsFileName) {
  EXPECT_EQ(ExportTargetOfStack("torchtitan"), ExportTarget::kTorchtitan);
  // NeMo's recipe wraps Megatron-LM's arguments, megatron-core's own form.
  EXPECT_EQ(ExportTargetOfStack("megatron-core"), ExportTarget::kMegatron);
  EXPECT_EQ(ExportTargetOfStack("deepspeed"), ExportTarget::kDeepSpeed);
  for (const char* stack : {"pytorch-fsdp", "pytorch-ddp", "nanotron",
                            "megatron-2021", "tessera", "nemo"}) {
    EXPECT_EQ(ExportTargetOfStack(stack), std::nullopt) << stack;
  }
  EXPECT_EQ(ExportFileName(ExportTarget::kTorchtitan), "torchtitan_config.py");
  EXPECT_EQ(ExportFileName(ExportTarget::kMegatron), "megatron_args.txt");
  EXPECT_EQ(ExportFileName(ExportTarget::kDeepSpeed), "ds_config.json");
  EXPECT_EQ(ExportFileName(ExportTarget::kNemo), "nemo_recipe.py");
}

// Megatron-LM d98e8a6: megatron/training/arguments.py and the
// TransformerConfig / ModelParallelConfig fields it turns into flags.
TEST(LayoutExportTest, MegatronArgumentsOfTheExample) {
  const Workload w = MakeWorkload();
  const std::string text = Export(w, L(kExample), ExportTarget::kMegatron);
  const std::map<std::string, std::string> a = MegatronArgs(text);
  const std::map<std::string, std::string> expected = {
      {"--tensor-model-parallel-size", "2"},
      {"--sequence-parallel", ""},
      {"--pipeline-model-parallel-size", "2"},
      {"--num-layers-per-virtual-pipeline-stage", "8"},  // 32 / (2 x 2)
      {"--context-parallel-size", "1"},
      {"--use-distributed-optimizer", ""},
      {"--micro-batch-size", "1"},
      {"--global-batch-size", "32"},
      {"--seq-length", "8192"},
      {"--max-position-embeddings", "8192"},
      {"--num-layers", "32"},
      {"--hidden-size", "4096"},
      {"--ffn-hidden-size", "14336"},
      {"--num-attention-heads", "32"},
      {"--group-query-attention", ""},
      {"--num-query-groups", "8"},
      {"--swiglu", ""},
      {"--normalization", "RMSNorm"},
      {"--norm-epsilon", "1e-05"},
      {"--position-embedding-type", "rope"},
      {"--rotary-base", "500000"},
      {"--disable-bias-linear", ""},
      {"--untie-embeddings-and-output-weights", ""},
      {"--recompute-granularity", "selective"},
      {"--recompute-modules", "core_attn"},
      {"--bf16", ""},
      // megatron-core's options on by default.
      {"--tp-comm-overlap", ""},
      {"--overlap-grad-reduce", ""},
      {"--overlap-param-gather", ""},
  };
  EXPECT_EQ(a, expected) << text;
  // Megatron's micro-batches per step: global / (micro x dp), dp = world /
  // (tp x pp x cp) = 16 / 4.
  const int64_t dp = w.cluster.world_size() / (2 * 2 * 1);
  EXPECT_EQ(std::stoll(a.at("--global-batch-size")),
            std::stoll(a.at("--micro-batch-size")) * dp * 8);
  EXPECT_NE(text.find("# Tessera layout tp=2,sp=1,pp=2,vpp=2,cp=1,dp=4,zero=1"),
            std::string::npos)
      << text;
}

TEST(LayoutExportTest, MegatronFp8FullRecomputeAndHsdpFsdp) {
  const Workload w = MakeWorkload("llama3-8b", Precision::kFp8);
  const std::string text =
      Export(w,
             L("tp=2,sp=1,pp=1,cp=2,zero=3,shard_group=2,micro_batch=1,"
               "recompute=full"),
             ExportTarget::kMegatron);
  const std::map<std::string, std::string> a = MegatronArgs(text);
  EXPECT_EQ(a.at("--context-parallel-size"), "2");
  EXPECT_EQ(a.count("--num-layers-per-virtual-pipeline-stage"), 0u);
  // ZeRO-3 is Megatron FSDP, which needs the fsdp_dtensor checkpoints;
  // dp = 16 / 4 = 4 in groups of 2: 2 optimizer instances.
  EXPECT_EQ(a.count("--use-distributed-optimizer"), 1u);
  EXPECT_EQ(a.count("--use-megatron-fsdp"), 1u);
  EXPECT_EQ(a.at("--data-parallel-sharding-strategy"), "optim_grads_params");
  EXPECT_EQ(a.at("--ckpt-format"), "fsdp_dtensor");
  EXPECT_EQ(a.at("--num-distributed-optimizer-instances"), "2");
  EXPECT_EQ(a.at("--recompute-granularity"), "full");
  EXPECT_EQ(a.at("--recompute-method"), "uniform");
  EXPECT_EQ(a.at("--recompute-num-layers"), "1");
  EXPECT_EQ(a.count("--recompute-modules"), 0u);
  EXPECT_EQ(a.count("--bf16"), 1u);
  EXPECT_EQ(a.at("--fp8-format"), "hybrid");
  EXPECT_EQ(a.count("--fp8-param-gather"), 0u);  // option off by default
  // ZeRO-2: gradients and optimizer only.
  const std::map<std::string, std::string> z2 = MegatronArgs(
      Export(w, L("tp=2,sp=1,zero=2,micro_batch=1"), ExportTarget::kMegatron));
  EXPECT_EQ(z2.at("--data-parallel-sharding-strategy"), "optim_grads");
  EXPECT_EQ(z2.count("--num-distributed-optimizer-instances"), 0u);
  // Zero 0: plain DDP, nothing sharded, no parameter gather to overlap.
  const std::map<std::string, std::string> z0 = MegatronArgs(
      Export(w, L("tp=2,sp=1,zero=0,micro_batch=1"), ExportTarget::kMegatron));
  EXPECT_EQ(z0.count("--use-distributed-optimizer"), 0u);
  EXPECT_EQ(z0.count("--use-megatron-fsdp"), 0u);
  EXPECT_EQ(z0.count("--overlap-grad-reduce"), 1u);
  EXPECT_EQ(z0.count("--overlap-param-gather"), 0u);
}

TEST(LayoutExportTest, MegatronMultiHeadModelAndStackOptions) {
  // llama2-7b: 32 kv heads of 32, no grouped-query attention.
  const std::map<std::string, std::string> mha = MegatronArgs(
      Export(MakeWorkload("llama2-7b"), L("tp=2,zero=1,micro_batch=1"),
             ExportTarget::kMegatron));
  EXPECT_EQ(mha.count("--group-query-attention"), 0u);
  EXPECT_EQ(mha.count("--num-query-groups"), 0u);
  EXPECT_EQ(mha.at("--rotary-base"), "10000");
  EXPECT_EQ(mha.count("--sequence-parallel"), 0u);
  // Without sp there is no TP overlap (validate_args asserts it).
  EXPECT_EQ(mha.count("--tp-comm-overlap"), 0u);
  EXPECT_EQ(mha.count("--recompute-granularity"), 0u);
  // The workload's options change the flags.
  const Workload w = MakeWorkload("llama3-8b", Precision::kFp8, "megatron-core",
                                  {"no-tp-comm-overlap", "no-overlap-p2p-comm",
                                   "grad-reduce-bf16", "fp8-param-gather"});
  const std::map<std::string, std::string> a =
      MegatronArgs(Export(w, L(kExample), ExportTarget::kMegatron));
  EXPECT_EQ(a.count("--tp-comm-overlap"), 0u);
  EXPECT_EQ(a.count("--no-overlap-p2p-communication"), 1u);
  EXPECT_EQ(a.count("--grad-reduce-in-bf16"), 1u);
  EXPECT_EQ(a.count("--fp8-param-gather"), 1u);
  // fp8 parameters need the distributed optimizer or Megatron FSDP.
  ExpectRefused(
      ExportLayout(w, L("tp=2,sp=1,zero=0,micro_batch=1"),
                   ExportTarget::kMegatron),
      absl::StatusCode::kFailedPrecondition,
      "training.stack_options: Megatron-LM's --fp8-param-gather needs the "
      "distributed optimizer or Megatron FSDP (zero >= 1), not zero 0; not "
      "exported to megatron");
}

TEST(LayoutExportTest, MegatronUnevenChunksAsAPipelineLayout) {
  // 126 layers on 4 x 2 chunks: 15 on the first and last, 16 elsewhere.
  const Workload w = MakeWorkload("llama3-405b");
  const std::string text =
      Export(w, L("tp=2,sp=1,pp=4,vpp=2,zero=1,micro_batch=1,recompute=full"),
             ExportTarget::kMegatron);
  const std::map<std::string, std::string> a = MegatronArgs(text);
  EXPECT_EQ(a.count("--num-layers-per-virtual-pipeline-stage"), 0u);
  ASSERT_EQ(a.count("--pipeline-model-parallel-layout"), 1u) << text;
  EXPECT_EQ(a.at("--pipeline-model-parallel-layout"),
            "'Et*15|t*16|t*16|t*16|t*16|t*16|t*16|t*15L'");
  std::string layout = a.at("--pipeline-model-parallel-layout");
  layout = layout.substr(1, layout.size() - 2);
  bool ends_ok = false;
  const std::vector<int> stages = UnrollLayout(layout, &ends_ok);
  EXPECT_TRUE(ends_ok);
  ASSERT_EQ(stages.size(), 8u);  // pp x vpp
  int layers = 0;
  for (int s : stages) layers += s;
  EXPECT_EQ(layers, 126);
  // Uneven without interleaving too: 126 layers on 4 stages.
  const std::map<std::string, std::string> pp4 = MegatronArgs(
      Export(w, L("tp=4,sp=1,pp=4,zero=1,micro_batch=1,recompute=full"),
             ExportTarget::kMegatron));
  ASSERT_EQ(pp4.count("--pipeline-model-parallel-layout"), 1u);
  EXPECT_EQ(pp4.at("--pipeline-model-parallel-layout"),
            "'Et*31|t*32|t*32|t*31L'");
}

// torchtitan b5bcd76: torchtitan/config/configs.py (ParallelismConfig,
// TrainingConfig, CompileConfig), torchtitan/trainer.py (the gradient
// accumulation rule), torchtitan/distributed/activation_checkpoint.py.
TEST(LayoutExportTest, TorchtitanHsdpPipelineFp8) {
  const Workload w = MakeWorkload("llama3-8b", Precision::kFp8, "torchtitan");
  const std::string text =
      Export(w,
             L("tp=2,sp=1,pp=2,vpp=2,cp=1,zero=3,shard_group=2,micro_batch=1,"
               "grad_accum=8,recompute=selective"),
             ExportTarget::kTorchtitan);
  const std::vector<std::string> body =
      FunctionBody(text, "apply_tessera_layout");
  ASSERT_FALSE(body.empty()) << text;
  const std::string c = "config.";
  // HSDP: 4 data-parallel ranks, sharded in groups of 2.
  EXPECT_EQ(PyValue(body, c + "parallelism.data_parallel_replicate_degree"),
            "2");
  EXPECT_EQ(PyValue(body, c + "parallelism.data_parallel_shard_degree"), "2");
  EXPECT_EQ(PyValue(body, c + "parallelism.fsdp_reshard_after_forward"),
            "\"default\"");
  EXPECT_EQ(PyValue(body, c + "parallelism.tensor_parallel_degree"), "2");
  EXPECT_EQ(PyValue(body, c + "parallelism.enable_sequence_parallel"), "True");
  EXPECT_EQ(PyValue(body, c + "parallelism.context_parallel_degree"), "1");
  EXPECT_EQ(PyValue(body, c + "parallelism.pipeline_parallel_degree"), "2");
  EXPECT_EQ(PyValue(body, c + "parallelism.pipeline_parallel_schedule"),
            "\"Interleaved1F1B\"");
  EXPECT_EQ(PyValue(body, c + "parallelism.num_pp_microbatches"), "8");
  EXPECT_EQ(PyValue(body, c + "training.disable_cuda_graphs"), "True");
  // Chunk m = v * pp + s; loop schedules give rank s the chunks s, s + pp.
  EXPECT_TRUE(Has(body,
                  "        [\"tok_embeddings\"] + [f\"layers.{i}\" for i in "
                  "range(0, 8)],  # rank 0, virtual stage 0"))
      << text;
  EXPECT_TRUE(Has(body,
                  "        [f\"layers.{i}\" for i in range(8, 16)],  # rank "
                  "1, virtual stage 0"));
  EXPECT_TRUE(Has(body,
                  "        [f\"layers.{i}\" for i in range(16, 24)],  # rank "
                  "0, virtual stage 1"));
  EXPECT_TRUE(Has(body,
                  "        [f\"layers.{i}\" for i in range(24, 32)] + "
                  "[\"norm\", \"lm_head\"],  # rank 1, virtual stage 1"));
  EXPECT_EQ(CountPrefix(body, "        ["), 4);
  // Batch in tokens: trainer.py's gradient accumulation is
  // tokens per step / (tokens per micro-batch x num_pp_microbatches x dp),
  // 1 with the pipeline taking all 8 micro-batches.
  EXPECT_EQ(PyValue(body, c + "training.max_context_length"), "8192");
  const int64_t per_mb = std::stoll(
      PyValue(body, c + "training.num_tokens_per_microbatch_per_dp_rank"));
  const int64_t per_step =
      std::stoll(PyValue(body, c + "training.num_tokens_per_train_step"));
  EXPECT_EQ(per_mb, 1 * 8192);
  EXPECT_EQ(per_step, 32 * 8192);
  EXPECT_EQ(per_step / (per_mb * 8 * 4), 1);
  EXPECT_EQ(per_step % (per_mb * 8 * 4), 0);
  EXPECT_EQ(PyValue(body, c + "activation_checkpoint"), "SelectiveAC.Config()");
  EXPECT_EQ(PyValue(body, c + "compile.enable"), "True");  // default option
  EXPECT_EQ(PyValue(body, c + "compile.enable_async_tensor_parallel"), "False");
  // float8 on the model: rowwise, the output projection in bf16.
  const std::vector<std::string> make = FunctionBody(text, "tessera_layout");
  EXPECT_TRUE(Has(make, "    config = llama3_8b()")) << text;
  EXPECT_TRUE(Has(make, "                recipe_name=\"rowwise\","));
  EXPECT_TRUE(Has(make, "                filter_fqns=[\"lm_head\"],"));
  EXPECT_TRUE(Has(Lines(text),
                  "from torchtitan.components.quantization "
                  "import Float8LinearConverter"));
}

TEST(LayoutExportTest, TorchtitanDdpAndZero2WithoutPipeline) {
  const Workload w = MakeWorkload("llama3-8b", Precision::kBf16, "torchtitan");
  // 16 GPUs, tp 2: dp 8, micro-batch 2, so grad-accum 2.
  const std::string ddp =
      Export(w, L("tp=2,sp=0,zero=0,micro_batch=2"), ExportTarget::kTorchtitan);
  const std::vector<std::string> body =
      FunctionBody(ddp, "apply_tessera_layout");
  const std::string c = "config.";
  EXPECT_EQ(PyValue(body, c + "parallelism.data_parallel_replicate_degree"),
            "8");
  EXPECT_EQ(PyValue(body, c + "parallelism.data_parallel_shard_degree"), "1");
  EXPECT_EQ(PyValue(body, c + "parallelism.fsdp_reshard_after_forward"), "");
  EXPECT_EQ(PyValue(body, c + "parallelism.enable_sequence_parallel"), "False");
  EXPECT_EQ(PyValue(body, c + "parallelism.pipeline_parallel_degree"), "1");
  EXPECT_EQ(PyValue(body, c + "parallelism.pipeline_parallel_schedule"), "");
  EXPECT_EQ(PyValue(body, c + "parallelism.num_pp_microbatches"), "");
  EXPECT_EQ(PyValue(body, c + "training.disable_cuda_graphs"), "");
  const int64_t per_mb = std::stoll(
      PyValue(body, c + "training.num_tokens_per_microbatch_per_dp_rank"));
  const int64_t per_step =
      std::stoll(PyValue(body, c + "training.num_tokens_per_train_step"));
  EXPECT_EQ(per_mb, 2 * 8192);
  EXPECT_EQ(per_step / (per_mb * 1 * 8), 2);  // grad-accum 2
  EXPECT_EQ(PyValue(body, c + "activation_checkpoint"), "None");
  EXPECT_EQ(ddp.find("import SelectiveAC"), std::string::npos);
  EXPECT_EQ(ddp.find("Float8"), std::string::npos);
  // ZeRO-2: FSDP without resharding after the forward; full recompute.
  const std::vector<std::string> z2 =
      FunctionBody(Export(w, L("tp=1,zero=2,micro_batch=1,recompute=full"),
                          ExportTarget::kTorchtitan),
                   "apply_tessera_layout");
  EXPECT_EQ(PyValue(z2, c + "parallelism.data_parallel_shard_degree"), "16");
  EXPECT_EQ(PyValue(z2, c + "parallelism.data_parallel_replicate_degree"), "1");
  EXPECT_EQ(PyValue(z2, c + "parallelism.fsdp_reshard_after_forward"),
            "\"never\"");
  EXPECT_EQ(PyValue(z2, c + "activation_checkpoint"), "FullAC.Config()");
  // Async TP when the option is on.
  const Workload async =
      MakeWorkload("llama3-8b", Precision::kBf16, "torchtitan", {"async-tp"});
  EXPECT_EQ(PyValue(FunctionBody(Export(async, L("tp=2,sp=1,zero=3"),
                                        ExportTarget::kTorchtitan),
                                 "apply_tessera_layout"),
                    c + "compile.enable_async_tensor_parallel"),
            "True");
  // A model without a torchtitan recipe: the layout function only.
  const std::string llama2 =
      Export(MakeWorkload("llama2-7b", Precision::kBf16, "torchtitan"),
             L("tp=2,zero=3"), ExportTarget::kTorchtitan);
  EXPECT_FALSE(FunctionBody(llama2, "apply_tessera_layout").empty());
  EXPECT_TRUE(FunctionBody(llama2, "tessera_layout").empty());
  EXPECT_NE(llama2.find("has no recipe for 'llama2-7b'"), std::string::npos);
}

TEST(LayoutExportTest, TorchtitanRefusals) {
  const Workload w = MakeWorkload("llama3-8b", Precision::kBf16, "torchtitan");
  // ZeRO-1: not a stage the torchtitan stack runs (CanRun's message).
  ExpectRefused(ExportLayout(w, L(kExample), ExportTarget::kTorchtitan),
                absl::StatusCode::kFailedPrecondition,
                "layout.zero: the torchtitan stack runs zero 0, 2, 3, not 1; "
                "not exported to torchtitan");
  ExpectRefused(
      ExportLayout(MakeWorkload("llama3-8b", Precision::kBf16, "torchtitan",
                                {"selective-layer"}),
                   L("zero=3,recompute=selective"), ExportTarget::kTorchtitan),
      absl::StatusCode::kFailedPrecondition,
      "training.stack_options: torchtitan b5bcd76 has no per-layer selective "
      "checkpointing (selective-layer was "
      "activation_checkpoint.selective_ac_option, removed in 2026-03); not "
      "exported to torchtitan: turn it off with no-selective-layer");
  ExpectRefused(
      ExportLayout(MakeWorkload("llama3-8b", Precision::kBf16, "torchtitan",
                                {"no-compile", "async-tp"}),
                   L("tp=2,sp=1,zero=3"), ExportTarget::kTorchtitan),
      absl::StatusCode::kFailedPrecondition,
      "training.stack_options: torchtitan's async-tp needs compile "
      "(compile.enable_async_tensor_parallel requires compile.enable); not "
      "exported to torchtitan");
}

// DeepSpeed edaa722: deepspeed/runtime/constants.py, zero/config.py,
// precision_config.py, activation_checkpointing/config.py.
TEST(LayoutExportTest, DeepSpeedConfigJson) {
  const Workload w = MakeWorkload("llama2-7b", Precision::kBf16, "deepspeed");
  const std::string text = Export(w, L("zero=2,micro_batch=1,recompute=full"),
                                  ExportTarget::kDeepSpeed);
  const nlohmann::json j = nlohmann::json::parse(text);
  const std::vector<std::string> keys = {"train_batch_size",
                                         "train_micro_batch_size_per_gpu",
                                         "gradient_accumulation_steps",
                                         "zero_optimization",
                                         "bf16",
                                         "activation_checkpointing"};
  EXPECT_EQ(j.size(), keys.size()) << text;
  for (const std::string& k : keys) EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["train_batch_size"], 32);
  EXPECT_EQ(j["train_micro_batch_size_per_gpu"], 1);
  EXPECT_EQ(j["gradient_accumulation_steps"], 2);  // 32 / (1 x 16)
  // DeepSpeed's check: train_batch_size = micro x grad-accum x dp world.
  EXPECT_EQ(j["train_batch_size"].get<int64_t>(),
            j["train_micro_batch_size_per_gpu"].get<int64_t>() *
                j["gradient_accumulation_steps"].get<int64_t>() * 16);
  EXPECT_EQ(j["zero_optimization"], nlohmann::json({{"stage", 2}}));
  EXPECT_EQ(j["bf16"], nlohmann::json({{"enabled", true}}));
  const nlohmann::json& ac = j["activation_checkpointing"];
  for (const char* k :
       {"partition_activations", "contiguous_memory_optimization",
        "cpu_checkpointing", "synchronize_checkpoint_boundary", "profile"}) {
    ASSERT_TRUE(ac.contains(k)) << k;
    EXPECT_EQ(ac[k], false) << k;
  }
  // No recomputation: no checkpointing section; zero 0 and 3 as they are.
  const nlohmann::json z3 = nlohmann::json::parse(
      Export(w, L("zero=3,micro_batch=2"), ExportTarget::kDeepSpeed));
  EXPECT_FALSE(z3.contains("activation_checkpointing"));
  EXPECT_EQ(z3["zero_optimization"]["stage"], 3);
  EXPECT_EQ(z3["gradient_accumulation_steps"], 1);
  EXPECT_EQ(z3["train_micro_batch_size_per_gpu"], 2);
  const nlohmann::json z0 =
      nlohmann::json::parse(Export(w, L("zero=0"), ExportTarget::kDeepSpeed));
  EXPECT_EQ(z0["zero_optimization"]["stage"], 0);
}

TEST(LayoutExportTest, DeepSpeedRefusals) {
  const Workload w = MakeWorkload("llama2-7b", Precision::kBf16, "deepspeed");
  ExpectRefused(ExportLayout(w, L("pp=2,zero=1"), ExportTarget::kDeepSpeed),
                absl::StatusCode::kFailedPrecondition,
                "layout.pp: a DeepSpeed config JSON cannot set pipeline "
                "parallelism (Megatron-DeepSpeed's "
                "--pipeline-model-parallel-size does)");
  ExpectRefused(
      ExportLayout(w, L("tp=2,sp=1,zero=1"), ExportTarget::kDeepSpeed),
      absl::StatusCode::kFailedPrecondition,
      "layout.tp: a DeepSpeed config JSON cannot set tensor "
      "parallelism (tp=2) for this layout: AutoTP's "
      "tensor_parallel.autotp_size needs the script's mpu for "
      "train_batch_size to count data-parallel ranks only "
      "(Megatron-DeepSpeed's --tensor-model-parallel-size sets it)");
  ExpectRefused(ExportLayout(w, L("zero=1,recompute=selective"),
                             ExportTarget::kDeepSpeed),
                absl::StatusCode::kFailedPrecondition,
                "layout.recompute: a DeepSpeed config JSON cannot select "
                "selective recomputation (Megatron-DeepSpeed's "
                "--recompute-granularity selective does)");
  // What the deepspeed stack cannot run at all (TrainingStack::CanRun).
  ExpectRefused(ExportLayout(w, L("cp=2,zero=1"), ExportTarget::kDeepSpeed),
                absl::StatusCode::kFailedPrecondition,
                "layout.cp: the deepspeed stack has no context parallelism "
                "(cp must be 1); not exported to deepspeed");
  ExpectRefused(
      ExportLayout(w, L("zero=3,shard_group=8"), ExportTarget::kDeepSpeed),
      absl::StatusCode::kFailedPrecondition,
      "layout.shard_group: the deepspeed stack has no hybrid "
      "sharding (HSDP): shard_group must be dp; not exported to "
      "deepspeed");
  ExpectRefused(
      ExportLayout(MakeWorkload("llama2-7b", Precision::kFp8, "deepspeed"),
                   L("zero=1"), ExportTarget::kDeepSpeed),
      absl::StatusCode::kFailedPrecondition,
      "training.precision: the deepspeed stack does not train in fp8; not "
      "exported to deepspeed");
}

// Megatron-Bridge 067f987: src/megatron/bridge/training/config.py,
// mixed_precision.py, comm_overlap.py; the fields are Megatron-Core's.
TEST(LayoutExportTest, NemoRecipeOfTheExample) {
  const std::string text =
      Export(MakeWorkload(), L(kExample), ExportTarget::kNemo);
  const std::vector<std::string> body =
      FunctionBody(text, "apply_tessera_layout");
  const std::map<std::string, std::string> expected = {
      {"cfg.model.tensor_model_parallel_size", "2"},
      {"cfg.model.sequence_parallel", "True"},
      {"cfg.model.pipeline_model_parallel_size", "2"},
      {"cfg.model.virtual_pipeline_model_parallel_size", "2"},
      {"cfg.model.pipeline_model_parallel_layout", "None"},
      {"cfg.model.context_parallel_size", "1"},
      {"cfg.ddp.use_distributed_optimizer", "True"},
      {"cfg.optimizer.use_distributed_optimizer", "True"},
      {"cfg.ddp.use_megatron_fsdp", "False"},
      {"cfg.ddp.data_parallel_sharding_strategy", "\"no_shard\""},
      {"cfg.ddp.num_distributed_optimizer_instances", "1"},
      {"cfg.train.micro_batch_size", "1"},
      {"cfg.train.global_batch_size", "32"},
      {"cfg.dataset.seq_length", "8192"},
      {"cfg.model.seq_length", "8192"},
      {"cfg.model.recompute_granularity", "\"selective\""},
      {"cfg.model.recompute_modules", "[\"core_attn\"]"},
      {"cfg.model.recompute_method", "None"},
      {"cfg.mixed_precision", "get_mixed_precision_config(\"bf16_mixed\")"},
      {"cfg.mixed_precision.grad_reduce_in_fp32", "True"},
      {"cfg.ddp.overlap_grad_reduce", "True"},
      {"cfg.ddp.overlap_param_gather", "True"},
      {"cfg.optimizer.overlap_param_gather", "True"},
  };
  for (const auto& [field, value] : expected) {
    EXPECT_EQ(PyValue(body, field), value) << field << "\n" << text;
  }
  EXPECT_TRUE(Has(body, "        tp_comm_overlap=True,")) << text;
  EXPECT_TRUE(Has(body, "        overlap_p2p_comm=True,"));
  EXPECT_TRUE(Has(body, "        batch_p2p_comm=False,"));
  EXPECT_EQ(PyValue(body, "cfg.checkpoint.ckpt_format"), "");
  EXPECT_EQ(PyValue(body, "cfg.mixed_precision.fp8_param_gather"), "");
  EXPECT_TRUE(Has(FunctionBody(text, "tessera_layout"),
                  "    return apply_tessera_layout("
                  "llama3_8b_pretrain_2gpu_h100_bf16_config())"))
      << text;
}

TEST(LayoutExportTest, NemoFsdpFp8AndUnevenChunks) {
  const Workload w = MakeWorkload("llama3-405b", Precision::kFp8,
                                  "megatron-core", {"grad-reduce-bf16"});
  const std::vector<std::string> body = FunctionBody(
      Export(w,
             L("tp=2,sp=1,pp=4,vpp=2,zero=3,shard_group=1,micro_batch=1,"
               "recompute=full"),
             ExportTarget::kNemo),
      "apply_tessera_layout");
  EXPECT_EQ(PyValue(body, "cfg.model.pipeline_model_parallel_layout"),
            "\"Et*15|t*16|t*16|t*16|t*16|t*16|t*16|t*15L\"");
  EXPECT_EQ(PyValue(body, "cfg.model.virtual_pipeline_model_parallel_size"),
            "2");
  // dp = 16 / 8 = 2, FSDP in groups of 1: 2 instances (HSDP).
  EXPECT_EQ(PyValue(body, "cfg.ddp.use_megatron_fsdp"), "True");
  EXPECT_EQ(PyValue(body, "cfg.ddp.data_parallel_sharding_strategy"),
            "\"optim_grads_params\"");
  EXPECT_EQ(PyValue(body, "cfg.ddp.num_distributed_optimizer_instances"), "2");
  EXPECT_EQ(PyValue(body, "cfg.checkpoint.ckpt_format"), "\"fsdp_dtensor\"");
  EXPECT_EQ(PyValue(body, "cfg.model.recompute_granularity"), "\"full\"");
  EXPECT_EQ(PyValue(body, "cfg.model.recompute_method"), "\"uniform\"");
  EXPECT_EQ(PyValue(body, "cfg.model.recompute_num_layers"), "1");
  EXPECT_EQ(PyValue(body, "cfg.mixed_precision"),
            "get_mixed_precision_config("
            "\"bf16_with_fp8_delayed_scaling_mixed\")");
  // Gradients reduced in bf16 (the option), set on the mixed-precision
  // config that Bridge applies to the ddp config at setup.
  EXPECT_EQ(PyValue(body, "cfg.mixed_precision.grad_reduce_in_fp32"), "False");
  // The preset gathers fp8 parameters; the plan's option is off.
  EXPECT_EQ(PyValue(body, "cfg.mixed_precision.fp8_param_gather"), "False");
  // Zero 0: no distributed optimizer in either config (Bridge turns both on
  // when one is).
  const std::vector<std::string> z0 = FunctionBody(
      Export(MakeWorkload("llama2-7b"), L("tp=2,zero=0"), ExportTarget::kNemo),
      "apply_tessera_layout");
  EXPECT_EQ(PyValue(z0, "cfg.ddp.use_distributed_optimizer"), "False");
  EXPECT_EQ(PyValue(z0, "cfg.optimizer.use_distributed_optimizer"), "False");
  EXPECT_EQ(PyValue(z0, "cfg.optimizer.overlap_param_gather"), "False");
  EXPECT_EQ(PyValue(z0, "cfg.model.recompute_granularity"), "None");
  EXPECT_EQ(PyValue(z0, "cfg.model.virtual_pipeline_model_parallel_size"),
            "None");
  // megatron-core's limits hold for nemo too.
  ExpectRefused(
      ExportLayout(MakeWorkload("llama3-8b", Precision::kFp8, "megatron-core",
                                {"fp8-param-gather"}),
                   L("tp=2,zero=0"), ExportTarget::kNemo),
      absl::StatusCode::kFailedPrecondition,
      "training.stack_options: Megatron-Core's fp8_param_gather needs the "
      "distributed optimizer or Megatron FSDP (zero >= 1), not zero 0; not "
      "exported to nemo");
}

TEST(LayoutExportTest, ResolvesTheLayoutAndChecksTheModel) {
  const Workload w = MakeWorkload();
  // dp and grad_accum derived as ResolveLayout does; a resolved layout is
  // the same export.
  absl::StatusOr<Layout> resolved = ResolveLayout(L(kExample), 16, 32);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(Export(w, L("tp=2,sp=1,pp=2,vpp=2,zero=1,recompute=selective"),
                   ExportTarget::kMegatron),
            Export(w, *resolved, ExportTarget::kMegatron));
  // A layout that does not reach the global batch.
  const absl::StatusOr<std::string> batch =
      ExportLayout(w, L("tp=2,grad_accum=3"), ExportTarget::kMegatron);
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(batch.status().message().rfind("layout.grad_accum", 0), 0u)
      << batch.status();
  // tp must divide the 8 kv heads.
  const absl::StatusOr<std::string> heads =
      ExportLayout(w, L("tp=16,sp=0,zero=1"), ExportTarget::kMegatron);
  ASSERT_FALSE(heads.ok());
  EXPECT_EQ(heads.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(heads.status().message().rfind("layout.tp", 0), 0u)
      << heads.status();
}

TEST(LayoutExportTest, OptionsOfAnotherStackDoNotApply) {
  // A megatron-core study exported to torchtitan: torchtitan's defaults
  // (compile on), not the study's options.
  const Workload w = MakeWorkload("llama3-8b", Precision::kBf16,
                                  "megatron-core", {"no-tp-comm-overlap"});
  EXPECT_EQ(PyValue(FunctionBody(Export(w, L("tp=2,sp=1,zero=3"),
                                        ExportTarget::kTorchtitan),
                                 "apply_tessera_layout"),
                    "config.compile.enable"),
            "True");
  EXPECT_EQ(
      MegatronArgs(Export(w, L("tp=2,sp=1,zero=1"), ExportTarget::kMegatron))
          .count("--tp-comm-overlap"),
      0u);
  // A study's unknown option for the target's own stack is its error.
  const absl::StatusOr<std::string> bad = ExportLayout(
      MakeWorkload("llama3-8b", Precision::kBf16, "megatron-core", {"turbo"}),
      L("tp=2,zero=1"), ExportTarget::kMegatron);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::exporters

namespace tessera::exporters {
namespace {

// The notes of an export: what the file alone does not do.
std::vector<std::string> Notes(const Workload& w, const Layout& l,
                               ExportTarget t) {
  absl::StatusOr<LayoutExport> e = ExportLayoutWithNotes(w, l, t);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? e->notes : std::vector<std::string>{};
}

bool AnyStartsWith(const std::vector<std::string>& notes,
                   const std::string& prefix) {
  return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) {
    return n.rfind(prefix, 0) == 0;
  });
}

// Every note is in the file as a comment, whole (its words in order).
void ExpectNotesInFile(const LayoutExport& e) {
  std::string comments;
  for (const std::string& line : Lines(e.text)) {
    if (line.rfind("# ", 0) == 0) comments += line.substr(2) + " ";
  }
  std::string flat;
  for (char c : comments) {
    if (c != ' ' || (!flat.empty() && flat.back() != ' ')) flat += c;
  }
  for (const std::string& note : e.notes) {
    EXPECT_NE(flat.find(note), std::string::npos) << note << "\n" << e.text;
  }
}

TEST(LayoutExportNotesTest, MegatronTensorParallelismNeedsOneConnection) {
  // megatron/training/arguments.py validate_args: tp or cp > 1 before
  // Blackwell asserts CUDA_DEVICE_MAX_CONNECTIONS == "1" (unless FSDP).
  const Workload w = MakeWorkload();
  const std::string set = "export CUDA_DEVICE_MAX_CONNECTIONS=1";
  const std::string unset = "leave CUDA_DEVICE_MAX_CONNECTIONS unset";
  const std::string warns = "Megatron-LM warns against this layout";
  std::vector<std::string> n = Notes(w, L(kExample), ExportTarget::kMegatron);
  EXPECT_TRUE(AnyStartsWith(n, set));
  EXPECT_FALSE(AnyStartsWith(n, unset));
  n = Notes(w, L("tp=1,cp=2,zero=1,micro_batch=1"), ExportTarget::kMegatron);
  EXPECT_TRUE(AnyStartsWith(n, set));
  // No model parallelism: nothing to set.
  n = Notes(w, L("tp=1,zero=1,micro_batch=1"), ExportTarget::kMegatron);
  EXPECT_FALSE(AnyStartsWith(n, set));
  EXPECT_FALSE(AnyStartsWith(n, unset));
  // Megatron-FSDP: the opposite, and with TP Megatron's own warning.
  n = Notes(w, L("tp=1,zero=3,micro_batch=1"), ExportTarget::kMegatron);
  EXPECT_TRUE(AnyStartsWith(n, unset));
  EXPECT_FALSE(AnyStartsWith(n, set));
  EXPECT_FALSE(AnyStartsWith(n, warns));
  n = Notes(w, L("tp=2,sp=1,zero=3,micro_batch=1"), ExportTarget::kMegatron);
  EXPECT_TRUE(AnyStartsWith(n, unset));
  EXPECT_TRUE(AnyStartsWith(n, warns));
  EXPECT_FALSE(AnyStartsWith(n, set));
  // Blackwell has no such requirement.
  Workload b = w;
  b.cluster.gpu.architecture = "blackwell";
  n = Notes(b, L(kExample), ExportTarget::kMegatron);
  EXPECT_FALSE(AnyStartsWith(n, set));
  n = Notes(b, L("tp=2,sp=1,zero=3,micro_batch=1"), ExportTarget::kMegatron);
  EXPECT_FALSE(AnyStartsWith(n, warns));
  // The notes are in the file as comments; the arguments still parse.
  absl::StatusOr<LayoutExport> e =
      ExportLayoutWithNotes(w, L(kExample), ExportTarget::kMegatron);
  ASSERT_TRUE(e.ok());
  ExpectNotesInFile(*e);
  EXPECT_EQ(MegatronArgs(e->text)["--tensor-model-parallel-size"], "2");
}

TEST(LayoutExportNotesTest, NemoFsdpAndTensorParallelism) {
  const Workload w = MakeWorkload();
  std::vector<std::string> n =
      Notes(w, L("tp=1,zero=3,micro_batch=1"), ExportTarget::kNemo);
  EXPECT_TRUE(AnyStartsWith(n, "leave CUDA_DEVICE_MAX_CONNECTIONS unset"));
  n = Notes(w, L(kExample), ExportTarget::kNemo);
  EXPECT_TRUE(AnyStartsWith(n, "export CUDA_DEVICE_MAX_CONNECTIONS=1"));
  absl::StatusOr<LayoutExport> e =
      ExportLayoutWithNotes(w, L(kExample), ExportTarget::kNemo);
  ASSERT_TRUE(e.ok());
  ExpectNotesInFile(*e);
}

TEST(LayoutExportNotesTest, DeepSpeedSaysFullRecomputeIsTheScriptsJob) {
  const Workload w = MakeWorkload("llama2-7b", Precision::kBf16, "deepspeed");
  std::vector<std::string> n = Notes(
      w, L("zero=2,micro_batch=1,recompute=full"), ExportTarget::kDeepSpeed);
  EXPECT_TRUE(AnyStartsWith(n,
                            "recompute=full: the activation_checkpointing "
                            "block only configures deepspeed.checkpointing"));
  n = Notes(w, L("zero=2,micro_batch=1"), ExportTarget::kDeepSpeed);
  EXPECT_FALSE(AnyStartsWith(n, "recompute=full"));
  // A JSON has no comments: the text is the JSON alone.
  absl::StatusOr<LayoutExport> e = ExportLayoutWithNotes(
      w, L("zero=2,micro_batch=1,recompute=full"), ExportTarget::kDeepSpeed);
  ASSERT_TRUE(e.ok());
  EXPECT_NO_THROW(nlohmann::json::parse(e->text));
}

TEST(LayoutExportNotesTest, TorchtitanPipelineKeepsParametersGathered) {
  // torchtitan/distributed/fsdp.py: "default" does not reshard after forward
  // with pipeline parallelism; the comment must not call it ZeRO-3.
  const Workload w = MakeWorkload("llama3-8b", Precision::kBf16, "torchtitan");
  const Layout piped = L("tp=2,sp=1,pp=2,zero=3,micro_batch=1");
  absl::StatusOr<LayoutExport> e =
      ExportLayoutWithNotes(w, piped, ExportTarget::kTorchtitan);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->text.find("ZeRO-3"), std::string::npos) << e->text;
  EXPECT_NE(e->text.find("FSDP without resharding after forward"),
            std::string::npos);
  EXPECT_TRUE(AnyStartsWith(e->notes,
                            "with pipeline parallelism torchtitan's "
                            "fsdp_reshard_after_forward"));
  ExpectNotesInFile(*e);
  // Without a pipeline, zero 3 reshards: ZeRO-3.
  e = ExportLayoutWithNotes(w, L("tp=2,sp=1,zero=3,micro_batch=1"),
                            ExportTarget::kTorchtitan);
  ASSERT_TRUE(e.ok());
  EXPECT_NE(e->text.find(": FSDP (ZeRO-3)"), std::string::npos) << e->text;
  EXPECT_FALSE(AnyStartsWith(e->notes, "with pipeline parallelism"));
}

TEST(LayoutExportNotesTest, TargetsFoldCaseAndSuggestNearNames) {
  EXPECT_EQ(*ParseExportTarget("TorchTitan"), ExportTarget::kTorchtitan);
  EXPECT_EQ(*ParseExportTarget("NEMO"), ExportTarget::kNemo);
  ExpectRefused(ParseExportTarget("megatron-lm").status(),
                absl::StatusCode::kInvalidArgument,
                "--export: 'megatron-lm' is not torchtitan, megatron, "
                "deepspeed or nemo (did you mean megatron?)");
}

}  // namespace
}  // namespace tessera::exporters

namespace tessera::exporters {
namespace {

// tests/data/framework_options.json: what each framework accepts at the
// commit its exporter cites, read from its source by
// tests/costmodel/extract_framework_options.py (the frameworks' own parsers
// cannot run here).
const nlohmann::json& FrameworkOptions() {
  static const nlohmann::json* options = [] {
    std::ifstream in(std::string(TESSERA_SOURCE_DIR) +
                     "/tests/data/framework_options.json");
    return new nlohmann::json(nlohmann::json::parse(in, nullptr, false));
  }();
  return *options;
}

bool Contains(const nlohmann::json& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Workloads and layouts that between them set every option each exporter
// writes: bf16 and fp8, tp with sp, interleaved and uneven pipelines, cp,
// ZeRO 0-3 with HSDP, every recomputation, the stacks' options.
struct Case {
  Workload workload;
  std::string layout;
};

std::vector<Case> Cases(const std::string& stack,
                        std::vector<std::vector<std::string>> options) {
  std::vector<Case> cases;
  const std::vector<std::string> layouts = {
      kExample,
      "tp=2,sp=1,pp=2,vpp=2,cp=1,zero=3,shard_group=2,micro_batch=1,"
      "recompute=full",
      "tp=1,pp=1,cp=2,zero=2,micro_batch=1,recompute=selective",
      "tp=1,pp=1,zero=0,micro_batch=2",
      "tp=1,pp=1,zero=3,micro_batch=1,recompute=full",
      "tp=2,sp=1,pp=3,zero=1,micro_batch=1"};
  for (Precision p : {Precision::kBf16, Precision::kFp8}) {
    for (const std::vector<std::string>& o : options) {
      for (const std::string& l : layouts) {
        cases.push_back({MakeWorkload("llama3-8b", p, stack, o), l});
      }
    }
  }
  return cases;
}

// Every exported layout of `cases` for `target` (the ones the target
// refuses are skipped: their refusals are tested above).
std::vector<std::string> Exports(const std::vector<Case>& cases,
                                 ExportTarget target, int* exported) {
  std::vector<std::string> texts;
  for (const Case& c : cases) {
    absl::StatusOr<Layout> layout = ParseLayout(c.layout);
    if (!layout.ok()) continue;
    absl::StatusOr<std::string> text =
        ExportLayout(c.workload, *layout, target);
    if (text.ok()) texts.push_back(*text);
  }
  *exported = static_cast<int>(texts.size());
  return texts;
}

TEST(FrameworkOptionNamesTest, MegatronFlagsAreMegatronLMs) {
  const nlohmann::json& known = FrameworkOptions()["megatron"]["flags"];
  ASSERT_TRUE(known.is_array()) << "tests/data/framework_options.json";
  int exported = 0;
  std::set<std::string> used;
  for (const std::string& text : Exports(
           Cases("megatron-core",
                 {{},
                  {"tp-comm-overlap", "fp8-param-gather", "grad-reduce-bf16"}}),
           ExportTarget::kMegatron, &exported)) {
    for (const auto& [flag, value] : MegatronArgs(text)) used.insert(flag);
  }
  EXPECT_GT(exported, 10);
  EXPECT_GT(used.size(), 30u);
  for (const std::string& flag : used) {
    EXPECT_TRUE(Contains(known, flag))
        << flag << " is not a flag of "
        << FrameworkOptions()["megatron"]["source"];
  }
}

TEST(FrameworkOptionNamesTest, TorchtitanFieldsAreTrainerConfigs) {
  const nlohmann::json& config = FrameworkOptions()["torchtitan"]["config"];
  ASSERT_TRUE(config.is_object());
  const std::regex assignment(R"(^    config\.([a-z_]+)(?:\.([a-z_]+))? = )");
  int exported = 0;
  int checked = 0;
  for (const std::string& text :
       Exports(Cases("torchtitan", {{}, {"async-tp"}, {"no-compile"}}),
               ExportTarget::kTorchtitan, &exported)) {
    for (const std::string& line : Lines(text)) {
      std::smatch m;
      if (!std::regex_search(line, m, assignment)) continue;
      ++checked;
      const std::string section = m[1].str(), field = m[2].str();
      if (field.empty()) {
        EXPECT_TRUE(Contains(config[""], section)) << line;
      } else {
        ASSERT_TRUE(config.contains(section)) << line;
        EXPECT_TRUE(Contains(config[section], field))
            << line << ": " << FrameworkOptions()["torchtitan"]["source"];
      }
    }
  }
  EXPECT_GT(exported, 10);
  EXPECT_GT(checked, 100);
}

TEST(FrameworkOptionNamesTest, DeepSpeedKeysAreDeepSpeedConfigs) {
  const nlohmann::json& known = FrameworkOptions()["deepspeed"]["keys"];
  ASSERT_TRUE(known.is_array());
  int exported = 0;
  int checked = 0;
  for (const std::string& text :
       Exports(Cases("deepspeed", {{}}), ExportTarget::kDeepSpeed, &exported)) {
    const nlohmann::json j = nlohmann::json::parse(text);
    for (const auto& [key, value] : j.items()) {
      ++checked;
      EXPECT_TRUE(Contains(known, key)) << key;
      if (!value.is_object()) continue;
      for (const auto& [inner, ignored] : value.items()) {
        ++checked;
        EXPECT_TRUE(Contains(known, inner)) << key << "." << inner;
      }
    }
  }
  EXPECT_GE(exported, 2);  // its JSON says no pipeline nor tp
  EXPECT_GT(checked, 10);
}

TEST(FrameworkOptionNamesTest, NemoFieldsAreConfigContainers) {
  const nlohmann::json& cfg = FrameworkOptions()["nemo"]["cfg"];
  ASSERT_TRUE(cfg.is_object());
  const std::regex assignment(R"(^    cfg\.([a-z_]+)(?:\.([a-z_0-9]+))? = )");
  const std::regex keyword(R"(^        ([a-z_]+)=)");
  int exported = 0;
  int checked = 0;
  for (const std::string& text :
       Exports(Cases("megatron-core",
                     {{}, {"tp-comm-overlap", "fp8-param-gather"}}),
               ExportTarget::kNemo, &exported)) {
    bool in_overlap = false;
    for (const std::string& line : Lines(text)) {
      std::smatch m;
      if (std::regex_search(line, m, assignment)) {
        ++checked;
        const std::string section = m[1].str(), field = m[2].str();
        in_overlap = line.find("CommOverlapConfig(") != std::string::npos;
        if (field.empty()) {
          EXPECT_TRUE(Contains(cfg[""], section)) << line;
        } else {
          ASSERT_TRUE(cfg.contains(section)) << line;
          EXPECT_TRUE(Contains(cfg[section], field))
              << line << ": " << FrameworkOptions()["nemo"]["source"];
        }
      } else if (in_overlap && std::regex_search(line, m, keyword)) {
        ++checked;
        EXPECT_TRUE(Contains(cfg["CommOverlapConfig()"], m[1].str())) << line;
      }
    }
  }
  EXPECT_GT(exported, 10);
  EXPECT_GT(checked, 100);
}

}  // namespace
}  // namespace tessera::exporters
