#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "costmodel/prediction.h"
#include "costmodel/stacks/stack_calibration.h"
#include "tests/cli/cli_test_util.h"

namespace tessera::cli {
namespace {

using nlohmann::json;

const char kLayout[] =
    "tp=2,pp=1,vpp=1,cp=1,zero=3,micro_batch=2,recompute=none";

std::vector<std::string> Predict(const std::string& layout,
                                 const std::vector<std::string>& more = {}) {
  return Concat(
      Concat(Concat({"predict"}, ExampleFlags()), {"--layout", layout}), more);
}

Workload Example() {
  return Workload{
      *ModelPreset("llama2-7b"), MakeCluster(*GpuPreset("h100-sxm"), 32, 8),
      TrainingConfig{
          .global_batch = 512, .seq_len = 4096, .total_tokens = 1e12}};
}

TEST(PredictCommandTest, FeasibleLayoutJson) {
  const CliRun r = RunCli(Predict(kLayout, {"--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["feasible"], true);
  EXPECT_EQ(j["reason"], "");
  // dp and grad_accum are derived: 256 / 2 = 128, 512 / (2 x 128) = 2;
  // ZeRO-3 shards over the whole dp group.
  const json& l = j["layout"];
  EXPECT_EQ(l["tp"], 2);
  EXPECT_EQ(l["dp"], 128);
  EXPECT_EQ(l["grad_accum"], 2);
  EXPECT_EQ(l["shard_group"], 128);
  EXPECT_EQ(l["zero"], 3);
  EXPECT_EQ(l["recompute"], "none");
  // The printed prediction is the cost model's with the default stack's
  // coefficients, field for field.
  const costmodel::LayoutEvaluation e =
      costmodel::PredictLayout(Example(), *ParseLayout(kLayout),
                             *costmodel::DefaultCalibration(Example()));
  ASSERT_TRUE(e.feasible) << e.reason;
  const json& p = j["prediction"];
  EXPECT_EQ(p["step_time_s"].get<double>(), e.prediction.step_time_s);
  EXPECT_EQ(p["tokens_per_s"].get<double>(), e.prediction.tokens_per_s);
  EXPECT_EQ(p["mfu"].get<double>(), e.prediction.mfu);
  EXPECT_EQ(p["exposed_comm_s"].get<double>(), e.prediction.exposed_comm_s);
  EXPECT_EQ(p["bubble_s"].get<double>(), e.prediction.bubble_s);
  EXPECT_EQ(p["watts_per_gpu"].get<double>(), e.prediction.watts_per_gpu);
  EXPECT_EQ(p["memory_breakdown"]["activations_bytes"].get<double>(),
            e.prediction.memory.activations_bytes);
  EXPECT_EQ(p["memory_breakdown"]["gathered_params_bytes"].get<double>(),
            e.prediction.memory.gathered_params_bytes);
  EXPECT_EQ(p["full_run"]["days"].get<double>(), e.prediction.full_run->days);
  // Hand relations: tokens per step over the step time.
  EXPECT_NEAR(p["tokens_per_s"].get<double>(),
              512.0 * 4096 / p["step_time_s"].get<double>(),
              1e-9 * p["tokens_per_s"].get<double>());
  EXPECT_FALSE(j.contains("memory_breakdown"));  // only when infeasible
}

TEST(PredictCommandTest, FeasibleLayoutHuman) {
  const CliRun r = RunCli(Predict(kLayout));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\nlayout: tp=2,sp=0,pp=1,vpp=1,cp=1,dp=128,zero=3,"
                       "shard_group=128,micro_batch=2,grad_accum=2,"
                       "recompute=none\n"),
            std::string::npos)
      << r.out;
  for (const char* line :
       {"\nstep time:      ", "\nthroughput:     ", "\nmemory per GPU: ",
        "\ncommunication:  tp ",
        "\npower:          ", "\nfull run of 1e+12 tokens: "}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line;
  }
  EXPECT_EQ(r.out.find("infeasible"), std::string::npos);
}

TEST(PredictCommandTest, TheSameLayoutOnPartOfTheCluster) {
  // tp 2 with micro-batch 2 on 32 nodes of 8: dp and gradient accumulation
  // take up the 512 sequences at each count of the ladder.
  const CliRun r = RunCli(Predict(kLayout));
  ASSERT_EQ(r.status, 0) << r.err;
  const size_t at = r.out.find(
      "\nthe same layout on part of the cluster (whole nodes; dp and "
      "gradient accumulation absorb the global batch):\n");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string part = r.out.substr(at);
  // 1 node: dp 4, 64 micro-batches of 2; 32 nodes: dp 128, 2. On 3
  // nodes (dp 12) 512 sequences do not split: no row.
  EXPECT_NE(part.find("\n    1     8    4  64 "), std::string::npos) << part;
  EXPECT_NE(part.find("\n   32   256  128   2 "), std::string::npos) << part;
  EXPECT_EQ(part.find("\n    3 "), std::string::npos) << part;
  EXPECT_NE(part.find("\nthe last 128 GPUs (256 rather than 128) shorten the "
                      "run by 50% for "),
            std::string::npos)
      << part;
}

TEST(PredictCommandTest, LayoutThatDoesNotResolveIsInfeasible) {
  // tp=3 does not divide the 256 GPUs: infeasible, not an input error.
  CliRun r = RunCli(Predict("tp=3"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\ninfeasible: layout.tp: "), std::string::npos)
      << r.out;
  // The echo names what was given, never "dp=0".
  EXPECT_NE(r.out.find("\nlayout: tp=3,sp=0,pp=1,vpp=1,cp=1,zero=0,"
                       "micro_batch=1,recompute=none (dp, shard group and "
                       "gradient accumulation not resolved)\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("dp=0"), std::string::npos) << r.out;
  r = RunCli(Predict("tp=3", {"--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["feasible"], false);
  EXPECT_EQ(j["reason"].get<std::string>().rfind("layout.tp: ", 0), 0u);
  EXPECT_TRUE(j["prediction"].is_null());
  EXPECT_EQ(j["layout"]["tp"], 3);
  // A global batch this layout cannot reach: 512 / (micro_batch 3 x dp 256).
  r = RunCli(Predict("micro_batch=3", {"--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["reason"].get<std::string>().rfind(
                "layout.micro_batch: ", 0),
            0u);
}

TEST(PredictCommandTest, LayoutThatDoesNotFitInMemoryIsInfeasible) {
  // llama2-70b without sharding on 8 x 40 GB: 70e9 x 16 bytes / 8 GPUs.
  const std::vector<std::string> args = {"predict",
                                         "--model",
                                         "llama2-70b",
                                         "--gpu",
                                         "a100-sxm-40g",
                                         "--nodes",
                                         "1",
                                         "--gpus-per-node",
                                         "8",
                                         "--global-batch",
                                         "8",
                                         "--seq-len",
                                         "4096",
                                         "--layout",
                                         "tp=8,zero=0"};
  CliRun r = RunCli(args);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\ninfeasible: memory"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nmemory per GPU: "), std::string::npos) << r.out;
  r = RunCli(Concat(args, {"--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["feasible"], false);
  EXPECT_EQ(j["reason"].get<std::string>().rfind("memory", 0), 0u);
  // Weights alone (2 + 4 + 4 + 8 bytes per parameter over tp 8) exceed 40 GB.
  EXPECT_GT(j["memory_breakdown"]["total_bytes"].get<double>(), 69e9 * 18 / 8);
}

TEST(PredictCommandTest, BadLayoutAndWorkloadExitTwo) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {Predict("tp=x"), "layout.tp: 'x' is not an integer"},
      {Predict("tp=2,foo=1"), "layout: unknown field 'foo'"},
      {Predict("tp"), "layout: 'tp' is not key=value"},
      {Predict("zero=4"), "layout.zero: "},
      {Predict("recompute=some"), "layout.recompute: "},
      {Predict("tp=2,tp=4"), "layout.tp: given twice"},
      {Concat({"predict"}, ExampleFlags()), "layout: required"},
      {Concat(Concat({"predict", "--layout", kLayout}, ExampleFlags()),
              {"--nodes", "0"}),
       "--nodes: given twice"},
      {{"predict", "--layout", kLayout, "--spec", "/nonexistent.json"},
       "spec: /nonexistent.json: cannot read"},
  };
  for (const auto& [args, expected] : cases) {
    SCOPED_TRACE(expected);
    const CliRun r = RunCli(args);
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
  }
  const CliRun r = RunCli(Predict("tp=x"));
  EXPECT_EQ(r.err.rfind("tessera predict: layout.tp: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("(--layout)"), std::string::npos) << r.err;
}

TEST(PredictCommandTest, SpecFileGivesWhatTheFlagsGive) {
  CliRun a = RunCli(
      {"predict", "--spec", ExampleSpecPath(), "--layout", kLayout, "--json"});
  CliRun b = RunCli(Predict(kLayout, {"--json"}));
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

// --export prints the layout as the framework's configuration and nothing
// else; --out writes it and prints the usual prediction; the default
// (megatron-core) stack's layout as Megatron-LM arguments, the resolved
// degrees and batch in Megatron's names.
TEST(PredictCommandTest, ExportPrintsTheFrameworksConfiguration) {
  const std::string layout = "tp=2,pp=1,cp=1,zero=1,micro_batch=2";
  CliRun r = RunCli(Predict(layout, {"--export", "megatron"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("# Megatron-LM arguments", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\n--tensor-model-parallel-size 2\n"),
            std::string::npos)
      << r.out;
  for (const char* line :
       {"\n--pipeline-model-parallel-size 1\n",
        "\n--use-distributed-optimizer\n", "\n--micro-batch-size 2\n",
        "\n--global-batch-size 512\n", "\n--seq-length 4096\n",
        "\n--num-layers 32\n"}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line << r.out;
  }
  EXPECT_EQ(r.out.find("tokens/s"), std::string::npos) << r.out;

  const std::string path = ::testing::TempDir() + "/predict_export.json";
  r = RunCli(Predict(
      "tp=1,pp=1,zero=2,micro_batch=1",
      {"--stack", "deepspeed", "--export", "deepspeed", "--out", path}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("tokens/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote " + path + " (deepspeed)"), std::string::npos);
  std::ifstream file(path);
  const json ds = json::parse(file);
  EXPECT_EQ(ds["zero_optimization"]["stage"], 2);
  EXPECT_EQ(ds["train_batch_size"], 512);
  EXPECT_EQ(ds["train_micro_batch_size_per_gpu"], 1);
  EXPECT_EQ(ds["gradient_accumulation_steps"], 2);  // 512 / (1 x 256)
}

TEST(PredictCommandTest, ExportErrorsNameTheProblem) {
  CliRun r = RunCli(Predict(kLayout, {"--export", "jax"}));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--export: 'jax' is not torchtitan, megatron, "
                       "deepspeed or nemo"),
            std::string::npos)
      << r.err;
  r = RunCli(Predict(kLayout, {"--out", "/tmp/x"}));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--out: only with --export"), std::string::npos)
      << r.err;
  // DeepSpeed's JSON cannot say tensor parallelism: bad input, exit 2.
  r = RunCli(
      Predict(kLayout, {"--stack", "deepspeed", "--export", "deepspeed"}));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--export: layout.tp"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  // A file that cannot be written: bad input, named as given.
  r = RunCli(Predict(kLayout, {"--export", "megatron", "--out",
                               "/nonexistent/folder/args.txt"}));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--out: cannot write /nonexistent/folder/args.txt: "),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find(".tmp."), std::string::npos) << r.err;
  // A target is found whatever its case, and a near name is suggested.
  r = RunCli(Predict(kLayout, {"--export", "Megatron"}));
  EXPECT_EQ(r.status, 0) << r.err;
  r = RunCli(Predict(kLayout, {"--export", "megatron-lm"}));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("(did you mean megatron?)"), std::string::npos) << r.err;
}

TEST(PredictCommandTest, ExportNeverChangesTheStackSilently) {
  // The prediction is pytorch-fsdp's; megatron runs megatron-core: refused,
  // naming the --stack that predicts what the file runs.
  const std::string layout = "tp=1,pp=1,zero=3,micro_batch=1";
  CliRun r = RunCli(
      Predict(layout, {"--stack", "pytorch-fsdp", "--export", "megatron"}));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("--export megatron: megatron runs the megatron-core "
                       "stack, and this prediction was ranked for "
                       "pytorch-fsdp: add --stack megatron-core"),
            std::string::npos)
      << r.err;
  // The default stack is megatron-core's: torchtitan refuses it too.
  r = RunCli(Predict(layout, {"--export", "torchtitan"}));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("add --stack torchtitan"), std::string::npos) << r.err;
  r = RunCli(
      Predict(layout, {"--stack", "torchtitan", "--export", "torchtitan"}));
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST(PredictCommandTest, ExportNotesGoToStandardError) {
  // Tensor parallelism on H100 with the distributed optimizer: Megatron-LM
  // will not start without CUDA_DEVICE_MAX_CONNECTIONS=1.
  CliRun r = RunCli(
      Predict("tp=2,pp=1,cp=1,zero=1,micro_batch=2", {"--export", "megatron"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("note: export CUDA_DEVICE_MAX_CONNECTIONS=1"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("# note: export CUDA_DEVICE_MAX_CONNECTIONS=1"),
            std::string::npos)
      << r.out;
  // Megatron-FSDP with TP: the opposite, and Megatron's own warning.
  r = RunCli(
      Predict("tp=2,pp=1,cp=1,zero=3,micro_batch=2", {"--export", "megatron"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find("CUDA_DEVICE_MAX_CONNECTIONS=1 before"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("note: leave CUDA_DEVICE_MAX_CONNECTIONS unset"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("note: Megatron-LM warns against this layout"),
            std::string::npos)
      << r.err;
  // DeepSpeed: the JSON has no comments, the note is on stderr only.
  r = RunCli(Predict("tp=1,pp=1,zero=2,micro_batch=1,recompute=full",
                     {"--stack", "deepspeed", "--export", "deepspeed"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NO_THROW(json::parse(r.out)) << r.out;
  EXPECT_NE(r.err.find("note: recompute=full: the activation_checkpointing "
                       "block only configures"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace tessera::cli
