// Training stacks as data (costmodel/stacks): every built-in file parses, a bad
// file is refused with its file and field named, a stack's options and
// capabilities change what is predicted and searched, and the stack defaults
// layer as stack_calibration.h says.
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "costmodel/memory/memory_model.h"
#include "costmodel/prediction.h"
#include "costmodel/search/search.h"
#include "costmodel/stacks/stack_calibration.h"
#include "costmodel/stacks/training_stack.h"

namespace tessera::costmodel {
namespace {

TEST(StacksTest, EveryIssueStackIsBuiltIn) {
  const std::vector<std::string> names = StackNames();
  const std::set<std::string> have(names.begin(), names.end());
  for (const char* name :
       {"megatron-core", "torchtitan", "pytorch-fsdp", "deepspeed", "nanotron",
        "megatron-2021", "tessera", "pytorch-ddp"}) {
    EXPECT_TRUE(have.count(name)) << name;
  }
  EXPECT_TRUE(FindStack(kDefaultTrainingStack).ok());
  const absl::Status unknown = FindStack("jax").status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("training.stack: unknown stack 'jax'"),
            std::string::npos)
      << unknown;
}

// A minimal valid stack file with `extra` fields added or replaced.
std::string StackJson(const std::string& extra = "") {
  return R"({"name": "mine", "description": "d", "source": "s",
    "layouts": {"sequence_parallel": "optional", "zero_stages": [0, 3],
                "recompute": ["none", "full"], "precisions": ["bf16"]},
    "attention": "flash",
    "saved": ["layer_input", "q", "k", "v", "attn_out"],
    "selective_recompute": {"description": "x", "saved": ["layer_input"],
                            "recomputed_gemms": []},
    "fsdp": {},
    "model_states": {}
    )" + extra + "}";
}

TEST(StacksTest, ParsesAFileAndNamesEveryMistake) {
  absl::StatusOr<TrainingStack> ok = ParseStack("mine.json", StackJson());
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_TRUE(ok->SupportsZeroStage(3));
  EXPECT_FALSE(ok->SupportsZeroStage(1));
  struct Bad {
    std::string file, json, expected;
  };
  const Bad bad[] = {
      {"mine.json", StackJson(R"(, "colour": 1)"), "mine.json: colour: unknown field"},
      {"mine.json", R"({"name": "mine")", "mine.json: (file): is not valid JSON"},
      {"yours.json", StackJson(), "yours.json: name: 'mine' must match"},
      {"mine.json",
       StackJson(R"(, "coefficients": {"gemm_peak_efficiency": 2})"),
       "mine.json: coefficients.gemm_peak_efficiency: calibration."
       "gemm_peak_efficiency: 2 is outside [0.05, 1]"},
      {"mine.json", StackJson(R"(, "coefficients": {"speed": 1})"),
       "mine.json: coefficients.speed: calibration: unknown coefficient"},
      {"mine.json",
       StackJson(R"(, "coefficients_by_architecture": {"tpu": {}})"),
       "mine.json: coefficients_by_architecture.tpu: unknown architecture"},
      {"mine.json",
       StackJson(R"(, "options": [{"name": "no-x", "description": "d"}])"),
       "mine.json: options[0].name: 'no-x' must be"},
  };
  for (const Bad& b : bad) {
    const absl::Status s = ParseStack(b.file, b.json).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << b.json;
    EXPECT_EQ(std::string(s.message()).rfind(b.expected, 0), 0u)
        << s.message() << "\n expected: " << b.expected;
  }
  // Scores are kept exactly when attention is materialised.
  std::string scores = StackJson();
  scores.replace(scores.find("\"attn_out\"]"), 11,
                 "\"attn_out\", \"attn_scores\"]");
  EXPECT_NE(ParseStack("mine.json", scores).status().message().find(
                "attn_scores is kept exactly when"),
            std::string::npos);
  // A wrong layouts entry.
  std::string zero = StackJson();
  zero.replace(zero.find("[0, 3]"), 6, "[0, 4]");
  EXPECT_NE(ParseStack("mine.json", zero).status().message().find(
                "layouts.zero_stages[1]: 4 is not a ZeRO stage"),
            std::string::npos);
}

TEST(StacksTest, CanRunSaysWhatTheStackLacks) {
  const TrainingStack& titan = **FindStack("torchtitan");
  const TrainingStack& fsdp = **FindStack("pytorch-fsdp");
  const TrainingStack& ds = **FindStack("deepspeed");
  auto reason = [](const TrainingStack& s, const Layout& l,
                   Precision p = Precision::kBf16) {
    return std::string(s.CanRun(l, p).message());
  };
  EXPECT_TRUE(titan.CanRun(Layout{.tp = 8, .sp = true, .zero = 3},
                           Precision::kFp8)
                  .ok());
  EXPECT_EQ(reason(titan, Layout{.zero = 1}),
            "layout.zero: the torchtitan stack runs zero 0, 2, 3, not 1");
  EXPECT_EQ(reason(fsdp, Layout{.tp = 2}),
            "layout.tp: the pytorch-fsdp stack has no tensor parallelism (tp "
            "must be 1)");
  EXPECT_EQ(reason(ds, Layout{.pp = 2, .zero = 3}),
            "layout.zero: the deepspeed stack runs pipeline parallelism only "
            "with zero <= 1");
  EXPECT_EQ(reason(ds, Layout{}, Precision::kFp8),
            "training.precision: the deepspeed stack does not train in fp8");
  EXPECT_EQ(reason(**FindStack("megatron-2021"),
                   Layout{.recompute = Recompute::kSelective}),
            "layout.recompute: the megatron-2021 stack has no 'selective' "
            "recomputation");
}

TEST(StacksTest, OptionsLayerOverTheDefaults) {
  const TrainingStack& titan = **FindStack("torchtitan");
  const GpuSpec h100 = *GpuPreset("h100-sxm");
  const GpuSpec a100 = *GpuPreset("a100-sxm-80g");
  // generic < stack < architecture < options.
  const Calibration generic;
  const Calibration on_h100 = *StackCalibration(titan, h100, {});
  const Calibration on_a100 = *StackCalibration(titan, a100, {});
  EXPECT_EQ(on_h100.attention_efficiency,
            titan.coefficients_by_architecture.at("hopper").at(
                "attention_efficiency"));
  EXPECT_NE(on_h100.attention_efficiency, on_a100.attention_efficiency);
  EXPECT_EQ(on_h100.ring_latency_factor, generic.ring_latency_factor);
  // compile is on by default; turning it off restores the eager figures,
  // the stack's own logits among them (compile compiles the loss too).
  const Calibration eager = *StackCalibration(titan, h100, {"no-compile"});
  EXPECT_GT(eager.elementwise_traffic_factor,
            on_h100.elementwise_traffic_factor);
  EXPECT_EQ(on_h100.logits_bytes_per_element,
            titan.FindOption("compile")->coefficients.at(
                "logits_bytes_per_element"));
  EXPECT_EQ(eager.logits_bytes_per_element,
            titan.coefficients.at("logits_bytes_per_element"));
  // A later option overrides an earlier one: compiled blocks, eager loss.
  const Calibration blocks_only =
      *StackCalibration(titan, h100, {"eager-loss"});
  EXPECT_EQ(blocks_only.logits_bytes_per_element,
            titan.coefficients.at("logits_bytes_per_element"));
  EXPECT_EQ(blocks_only.elementwise_traffic_factor,
            on_h100.elementwise_traffic_factor);
  EXPECT_EQ(StackCalibration(titan, h100, {"async-tp"})->tp_overlap_efficiency,
            titan.FindOption("async-tp")->coefficients.at(
                "tp_overlap_efficiency"));
  // Unknown or repeated options are refused.
  EXPECT_EQ(StackCalibration(titan, h100, {"warp-drive"}).status().message(),
            "training.stack_options: the torchtitan stack has no option "
            "'warp-drive' (its options: compile, eager-loss, async-tp, "
            "float8-rowwise, selective-layer)");
  EXPECT_NE(StackCalibration(titan, h100, {"compile", "no-compile"})
                .status()
                .message()
                .find("'compile' is set twice"),
            std::string::npos);
  // Options change the bytes collectives carry and states take, field by
  // field, and compose.
  TrainingConfig fsdp{.global_batch = 8, .seq_len = 4096,
                      .stack = "pytorch-fsdp"};
  EXPECT_EQ(StackForTraining(fsdp)->comm_bytes.gradient_reduce, 2);
  fsdp.stack_options = {"reduce-fp32"};
  EXPECT_EQ(StackForTraining(fsdp)->comm_bytes.gradient_reduce, 4);
  TrainingConfig mc{.global_batch = 8, .seq_len = 4096,
                    .stack = "megatron-core",
                    .stack_options = {"grad-reduce-bf16", "fp8-param-gather"},
                    .precision = Precision::kFp8};
  const TrainingStack both = *StackForTraining(mc);
  EXPECT_EQ(both.comm_bytes.gradient_reduce, 2);
  EXPECT_EQ(both.comm_bytes.parameter_gather, 1);
  EXPECT_EQ(both.model_states.gradients, 2);
  EXPECT_EQ(both.model_states.weights, 0);
  EXPECT_EQ(both.model_states.master_weights, 4);
  // An option can replace the selective policy.
  TrainingConfig t{.global_batch = 8, .seq_len = 4096, .stack = "torchtitan"};
  EXPECT_EQ(StackForTraining(t)->selective.full_recompute_layer_fraction, 0);
  t.stack_options = {"selective-layer"};
  EXPECT_EQ(StackForTraining(t)->selective.full_recompute_layer_fraction, 0.5);
}

Workload Llama8bOn16(const char* stack) {
  return Workload{*ModelPreset("llama3-8b"),
                  MakeCluster(*GpuPreset("h100-sxm"), 2, 8),
                  TrainingConfig{.global_batch = 64,
                                 .seq_len = 4096,
                                 .stack = stack}};
}

// A 125M model: every ZeRO stage fits, so the search keeps each.
Workload SmallOn16(const char* stack) {
  return Workload{*ModelPreset("small"),
                  MakeCluster(*GpuPreset("h100-sxm"), 2, 8),
                  TrainingConfig{.global_batch = 64,
                                 .seq_len = 2048,
                                 .stack = stack}};
}

TEST(StacksTest, TheSearchProposesOnlyWhatTheStackRuns) {
  for (const char* name : {"torchtitan", "pytorch-fsdp", "deepspeed",
                           "nanotron", "megatron-2021", "tessera",
                           "megatron-core"}) {
    const Workload w = SmallOn16(name);
    const TrainingStack& stack = **FindStack(name);
    absl::StatusOr<SearchResult> r =
        SearchLayouts(w, *DefaultCalibration(w), SearchOptions{.top = 0});
    ASSERT_TRUE(r.ok()) << name << ": " << r.status();
    ASSERT_GT(r->feasible, 0) << name;
    std::set<int64_t> zeros;
    for (const LayoutEvaluation& e : r->candidates) {
      EXPECT_TRUE(stack.CanRun(e.layout, Precision::kBf16).ok())
          << name << ": " << FormatLayout(e.layout);
      zeros.insert(e.layout.zero);
    }
    // Every stage the stack runs is searched (and none other).
    EXPECT_EQ(zeros, std::set<int64_t>(stack.layouts.zero_stages.begin(),
                                       stack.layouts.zero_stages.end()))
        << name;
  }
  // A layout the stack cannot run is predicted infeasible, with the reason.
  const Workload titan = Llama8bOn16("torchtitan");
  const LayoutEvaluation e =
      PredictLayout(titan, Layout{.zero = 1}, *DefaultCalibration(titan));
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.reason, "layout.zero: the torchtitan stack runs zero 0, 2, 3, not 1");
}

TEST(StacksTest, TheSameLayoutDiffersByStack) {
  // llama3-8b FSDP on 16 H100: FSDP2 (no persistent bf16 copy) needs less
  // memory than Megatron FSDP (bf16 weights beside the fp32 master).
  const Layout l{.zero = 3, .micro_batch = 1, .recompute = Recompute::kFull};
  const Workload titan = Llama8bOn16("torchtitan");
  const Workload mcore = Llama8bOn16("megatron-core");
  const LayoutEvaluation a = PredictLayout(titan, l, *DefaultCalibration(titan));
  const LayoutEvaluation b = PredictLayout(mcore, l, *DefaultCalibration(mcore));
  ASSERT_TRUE(a.feasible && b.feasible);
  EXPECT_LT(a.prediction.memory.weights_bytes,
            b.prediction.memory.weights_bytes);
  EXPECT_NE(a.prediction.step_time_s, b.prediction.step_time_s);
}

TEST(StacksTest, TheMemoryModelTakesTheStacksBytes) {
  // A stack of our own with unusual state bytes: every figure follows it.
  std::string json = StackJson(R"(, "comm_bytes": {"gradient_reduce": 1})");
  const std::string empty_states = R"("model_states": {})";
  json.replace(json.find(empty_states), empty_states.size(),
               R"("model_states": {"weights": 1, "master_weights": 2,
                  "gradients": 3, "optimizer": 5})");
  absl::StatusOr<TrainingStack> mine = ParseStack("mine.json", json);
  ASSERT_TRUE(mine.ok()) << mine.status();
  const ModelConfig m = *ModelPreset("llama2-7b");
  const double p = static_cast<double>(m.ParamCount());
  const Layout l = *ResolveLayout(Layout{.zero = 0}, 8, 8);
  const MemoryBreakdown mem = PeakMemoryPerGpu(
      m, l, TrainingConfig{.global_batch = 8, .seq_len = 4096}, *mine,
      Calibration{});
  EXPECT_DOUBLE_EQ(mem.weights_bytes, 1 * p);
  EXPECT_DOUBLE_EQ(mem.master_weights_bytes, 2 * p);
  EXPECT_DOUBLE_EQ(mem.gradients_bytes, 3 * p);
  EXPECT_DOUBLE_EQ(mem.optimizer_bytes, 5 * p);
}

TEST(StacksTest, UnevenInterleavingOnlyWhereTheStackSizesChunks) {
  // llama3-405b's 126 layers on pp 16 with vpp 2: 32 chunks, two short.
  const Workload mc{*ModelPreset("llama3-405b"),
                    MakeCluster(*GpuPreset("h100-sxm"), 256, 8),
                    TrainingConfig{.global_batch = 512, .seq_len = 8192}};
  const Layout l{.tp = 8, .sp = true, .pp = 16, .vpp = 2, .zero = 1,
                 .micro_batch = 1, .recompute = Recompute::kFull};
  const LayoutEvaluation e = PredictLayout(mc, l, *DefaultCalibration(mc));
  EXPECT_TRUE(e.feasible) << e.reason;
  Workload tess = mc;
  tess.training.stack = "tessera";
  EXPECT_EQ(PredictLayout(tess, l, *DefaultCalibration(tess)).reason,
            "layout.vpp: pp*vpp = 32 does not divide the 126 layers");
}

}  // namespace
}  // namespace tessera::costmodel
