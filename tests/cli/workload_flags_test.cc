#include "cli/workload_flags.h"

#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "core/gpu.h"
#include "gtest/gtest.h"

namespace tessera::cli {
namespace {

const std::string kExample =
    std::string(TESSERA_SOURCE_DIR) + "/deploy/examples/study.json";

// The example study as flags.
const std::vector<std::string> kExampleFlags = {
    "--model",        "llama2-7b", "--gpu",           "h100-sxm",
    "--nodes",        "32",        "--gpus-per-node", "8",
    "--global-batch", "512",       "--seq-len",       "4096",
    "--total-tokens", "1e12"};

absl::StatusOr<Study> Resolve(const std::vector<std::string>& args) {
  WorkloadFlags w;
  FlagSet flags("tessera test");
  w.Register(&flags);
  const absl::Status s = flags.Parse(args);
  if (!s.ok()) return s;
  return w.Resolve();
}

std::string ErrorOf(const std::vector<std::string>& args) {
  absl::StatusOr<Study> study = Resolve(args);
  if (study.ok()) return "";
  EXPECT_EQ(study.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(study.status().message());
}

std::vector<std::string> With(std::vector<std::string> args,
                              const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// Replaces the value of `flag` in the example flags.
std::vector<std::string> Replace(const std::string& flag,
                                 const std::string& value) {
  std::vector<std::string> args = kExampleFlags;
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == flag) args[i + 1] = value;
  }
  return args;
}

// Drops `flag` and its value from the example flags.
std::vector<std::string> Without(const std::string& flag) {
  std::vector<std::string> args;
  for (size_t i = 0; i < kExampleFlags.size(); ++i) {
    if (kExampleFlags[i] == flag) {
      ++i;
      continue;
    }
    args.push_back(kExampleFlags[i]);
  }
  return args;
}

TEST(WorkloadFlagsTest, SpecFileEqualsFlags) {
  absl::StatusOr<Study> from_flags = Resolve(kExampleFlags);
  absl::StatusOr<Study> from_file = Resolve({"--spec", kExample});
  ASSERT_TRUE(from_flags.ok()) << from_flags.status();
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  const Workload& a = from_flags->workload;
  const Workload& b = from_file->workload;
  EXPECT_EQ(a.model.name, "llama2-7b");
  EXPECT_EQ(a.model.name, b.model.name);
  EXPECT_EQ(a.model.ParamCount(), b.model.ParamCount());
  EXPECT_EQ(a.cluster.gpu.name, b.cluster.gpu.name);
  EXPECT_EQ(a.cluster.world_size(), 256);
  EXPECT_EQ(a.cluster.world_size(), b.cluster.world_size());
  EXPECT_EQ(a.cluster.inter_node_gbs, b.cluster.inter_node_gbs);
  EXPECT_EQ(a.training.global_batch, b.training.global_batch);
  EXPECT_EQ(a.training.seq_len, b.training.seq_len);
  EXPECT_EQ(a.training.total_tokens, b.training.total_tokens);
  EXPECT_EQ(from_file->spec.search().top(), 10);
}

TEST(WorkloadFlagsTest, StackOptionsAndPrecision) {
  absl::StatusOr<Study> s = Resolve(
      With(kExampleFlags, {"--stack", "torchtitan", "--stack-options",
                           "async-tp, no-compile", "--precision", "fp8"}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->workload.training.stack, "torchtitan");
  EXPECT_EQ(s->workload.training.stack_options,
            (std::vector<std::string>{"async-tp", "no-compile"}));
  EXPECT_EQ(s->workload.training.precision, Precision::kFp8);
  // Without the flag the stack's defaults stand; an empty value is refused.
  s = Resolve(With(kExampleFlags, {"--stack", "torchtitan"}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->workload.training.stack_options.empty());
  EXPECT_EQ(ErrorOf(With(kExampleFlags, {"--stack-options", ""})),
            "--stack-options: empty value (--stack-options A,B)");
  EXPECT_EQ(ErrorOf(With(kExampleFlags, {"--stack", "jax"}))
                .rfind("training.stack: unknown stack 'jax'", 0),
            0u);
  EXPECT_NE(ErrorOf(With(kExampleFlags, {"--stack", "jax"})).find("(--stack)"),
            std::string::npos);
  EXPECT_EQ(ErrorOf(With(kExampleFlags, {"--precision", "fp4"})),
            "training.precision: 'fp4' is not bf16 or fp8 (--precision)");
  EXPECT_NE(ErrorOf(With(kExampleFlags,
                         {"--stack", "torchtitan", "--stack-options", "x"}))
                .find("(--stack-options)"),
            std::string::npos);
}

TEST(WorkloadFlagsTest, FlagsOverrideTheSpecFile) {
  absl::StatusOr<Study> study =
      Resolve({"--spec", kExample, "--nodes", "64", "--model", "llama2-13b",
               "--inter-node-gbs", "100", "--inter-node-latency-us", "8"});
  ASSERT_TRUE(study.ok()) << study.status();
  EXPECT_EQ(study->workload.cluster.nodes, 64);
  EXPECT_EQ(study->workload.cluster.gpus_per_node, 8);  // from the file
  EXPECT_EQ(study->workload.model.name, "llama2-13b");
  EXPECT_EQ(study->workload.model.layers, 40);
  EXPECT_EQ(study->workload.cluster.inter_node_gbs, 100);
  EXPECT_EQ(study->workload.cluster.inter_node_latency_us, 8);
  EXPECT_EQ(study->workload.training.total_tokens, 1e12);
}

TEST(WorkloadFlagsTest, ExplicitDimensionsInsteadOfAPreset) {
  absl::StatusOr<Study> study = Resolve({"--layers",
                                         "2",
                                         "--hidden",
                                         "64",
                                         "--heads",
                                         "4",
                                         "--kv-heads",
                                         "2",
                                         "--ffn-hidden",
                                         "128",
                                         "--vocab",
                                         "1000",
                                         "--mlp",
                                         "gelu",
                                         "--tie-embeddings",
                                         "--gpu",
                                         "a100-sxm-80g",
                                         "--nodes",
                                         "1",
                                         "--gpus-per-node",
                                         "4",
                                         "--global-batch",
                                         "8",
                                         "--seq-len",
                                         "256"});
  ASSERT_TRUE(study.ok()) << study.status();
  const ModelConfig& m = study->workload.model;
  EXPECT_EQ(m.name, "custom");
  EXPECT_EQ(m.layers, 2);
  EXPECT_EQ(m.kv_heads, 2);
  EXPECT_EQ(m.ffn_hidden, 128);
  EXPECT_EQ(m.vocab, 1000);
  EXPECT_EQ(m.mlp, MlpKind::kGelu);
  EXPECT_TRUE(m.tie_embeddings);
  // Over a preset: the preset with one field changed.
  study = Resolve(With(Replace("--model", "llama2-7b"), {"--layers", "16"}));
  ASSERT_TRUE(study.ok()) << study.status();
  EXPECT_EQ(study->workload.model.layers, 16);
  EXPECT_EQ(study->workload.model.hidden, 4096);
  EXPECT_EQ(study->workload.model.name, "custom");
}

TEST(WorkloadFlagsTest, BadValuesNameTheFieldAndTheFlag) {
  EXPECT_EQ(ErrorOf(Replace("--nodes", "0")),
            "cluster.nodes: must be an integer in [1, 131072], got 0 "
            "(--nodes)");
  EXPECT_EQ(ErrorOf(Replace("--gpus-per-node", "0")),
            "cluster.gpus_per_node: must be an integer in [1, 1024], got 0 "
            "(--gpus-per-node)");
  EXPECT_EQ(
      ErrorOf(Replace("--model", "llama9"))
          .rfind("model.preset: unknown preset 'llama9' (known: llama2-7b", 0),
      0u);
  EXPECT_NE(ErrorOf(Replace("--model", "llama9")).find("(--model)"),
            std::string::npos);
  EXPECT_EQ(ErrorOf(Replace("--gpu", "b200"))
                .rfind("cluster.gpu.preset: unknown preset 'b200'", 0),
            0u);
  EXPECT_EQ(ErrorOf(Replace("--global-batch", "-4")),
            "training.global_batch: must be an integer in [1, 16777216], got "
            "-4 (--global-batch)");
  EXPECT_EQ(ErrorOf(Replace("--total-tokens", "-1"))
                .rfind("training.total_tokens: ", 0),
            0u);
  EXPECT_EQ(ErrorOf(With(kExampleFlags, {"--inter-node-gbs", "0"})),
            "cluster.inter_node_gbs: must be a finite positive number, got 0 "
            "(--inter-node-gbs)");
  EXPECT_EQ(
      ErrorOf(With(kExampleFlags, {"--heads", "33"})).rfind("model.heads: ", 0),
      0u);
  EXPECT_EQ(ErrorOf(With(kExampleFlags, {"--mlp", "relu"})),
            "model.mlp: 'relu' is not swiglu or gelu (--mlp)");
  EXPECT_EQ(
      ErrorOf({"--layers", "2", "--hidden", "64", "--heads", "4", "--vocab",
               "100", "--gpu", "h100-sxm", "--nodes", "1", "--gpus-per-node",
               "1", "--global-batch", "1", "--seq-len", "16"}),
      "model.ffn_hidden: required without a preset (--ffn-hidden)");
}

TEST(WorkloadFlagsTest, MissingRequiredFlags) {
  EXPECT_EQ(ErrorOf(Without("--nodes")), "cluster.nodes: required (--nodes N)");
  EXPECT_EQ(ErrorOf(Without("--gpus-per-node")),
            "cluster.gpus_per_node: required (--gpus-per-node N)");
  EXPECT_EQ(ErrorOf(Without("--global-batch")),
            "training.global_batch: required (--global-batch N, in "
            "sequences)");
  EXPECT_EQ(ErrorOf(Without("--seq-len")),
            "training.seq_len: required (--seq-len N)");
  EXPECT_EQ(ErrorOf(Without("--gpu"))
                .rfind("cluster.gpu: required (--gpu NAME: h100-sxm", 0),
            0u);
  EXPECT_EQ(ErrorOf(Without("--model"))
                .rfind("model: required (--model NAME: llama2-7b", 0),
            0u);
  EXPECT_EQ(ErrorOf(Without("--total-tokens")), "");  // optional
}

TEST(WorkloadFlagsTest, EveryMissingFlagAndBadValueAtOnce) {
  // Parse alone reports them, one line each: the bad --nodes and --seq-len
  // were given, so they are not also missing.
  EXPECT_EQ(
      ErrorOf({"--model", "llama2-7b", "--nodes", "x", "--seq-len", "8q"}),
      "--nodes: 'x' is not an integer\n"
      "--seq-len: '8q' is not a number with an optional suffix (k, M, G, "
      "T, P; Ki, Mi, Gi, Ti)\n"
      "cluster.gpu: required (--gpu NAME: " +
          absl::StrJoin(GpuPresetNames(), ", ") +
          ")\n"
          "cluster.gpus_per_node: required (--gpus-per-node N)\n"
          "training.global_batch: required (--global-batch N, in "
          "sequences)");
  // A study file supplies them.
  EXPECT_EQ(ErrorOf({"--spec", kExample, "--seq-len", "2k"}), "");
}

TEST(WorkloadFlagsTest, SizeSuffixesOnCountFlags) {
  std::vector<std::string> args = kExampleFlags;
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--seq-len") args[i + 1] = "8Ki";
    if (args[i] == "--total-tokens") args[i + 1] = "1.5T";
    if (args[i] == "--global-batch") args[i + 1] = "1k";
  }
  absl::StatusOr<Study> study = Resolve(args);
  ASSERT_TRUE(study.ok()) << study.status();
  EXPECT_EQ(study->workload.training.seq_len, 8192);
  EXPECT_EQ(study->workload.training.total_tokens, 1.5e12);
  EXPECT_EQ(study->workload.training.global_batch, 1000);
  EXPECT_EQ(ErrorOf(Replace("--seq-len", "1.0001k")),
            "--seq-len: '1.0001k' is not an integer");
}

TEST(WorkloadFlagsTest, SpecFileErrorsNameTheFile) {
  EXPECT_EQ(ErrorOf({"--spec", "/nonexistent.json"}),
            "spec: /nonexistent.json: cannot read: No such file or directory");
  // A value from the file that is invalid names the file; one from a flag
  // names the flag.
  EXPECT_EQ(ErrorOf({"--spec", kExample, "--seq-len", "0"}),
            "training.seq_len: must be an integer in [1, 16777216], got 0 "
            "(--seq-len)");
  EXPECT_EQ(ErrorOf({"--spec", kExample, "--layers", "2", "--model",
                     "llama2-7b", "--heads", "5"})
                .rfind("model.heads: ", 0),
            0u);
}

}  // namespace
}  // namespace tessera::cli
