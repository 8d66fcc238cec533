#include "proto/convert.h"

#include <string>

#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "proto/spec_json.h"
#include "service/plan_convert.h"

namespace tessera {
namespace {

v1::StudySpec Parse(const std::string& json) {
  absl::StatusOr<v1::StudySpec> spec = StudySpecFromJson(json, "test");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : v1::StudySpec();
}

// The error WorkloadFromSpec gives for `json` ("" when it converts).
std::string ErrorOf(const std::string& json) {
  absl::StatusOr<Workload> w = WorkloadFromSpec(Parse(json));
  if (w.ok()) return "";
  EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(w.status().message());
}

constexpr char kCluster[] =
    R"("cluster": {"gpu": {"preset": "h100-sxm"}, "nodes": 2,
                   "gpus_per_node": 8})";
constexpr char kTraining[] =
    R"("training": {"global_batch": 64, "seq_len": 2048})";

std::string WithModel(const std::string& model) {
  return "{\"model\": " + model + ", " + kCluster + ", " + kTraining + "}";
}

void ExpectSameModel(const ModelConfig& a, const ModelConfig& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.layers, b.layers);
  EXPECT_EQ(a.hidden, b.hidden);
  EXPECT_EQ(a.heads, b.heads);
  EXPECT_EQ(a.kv_heads, b.kv_heads);
  EXPECT_EQ(a.ffn_hidden, b.ffn_hidden);
  EXPECT_EQ(a.vocab, b.vocab);
  EXPECT_EQ(a.mlp, b.mlp);
  EXPECT_EQ(a.tie_embeddings, b.tie_embeddings);
  EXPECT_EQ(a.rope_theta, b.rope_theta);
  EXPECT_EQ(a.norm_eps, b.norm_eps);
}

void ExpectSameWorkload(const Workload& a, const Workload& b) {
  ExpectSameModel(a.model, b.model);
  const GpuSpec& g = a.cluster.gpu;
  const GpuSpec& h = b.cluster.gpu;
  EXPECT_EQ(g.name, h.name);
  EXPECT_EQ(g.peak_dense_tflops, h.peak_dense_tflops);
  EXPECT_EQ(g.memory_bytes, h.memory_bytes);
  EXPECT_EQ(g.hbm_gbs, h.hbm_gbs);
  EXPECT_EQ(g.nvlink_gbs, h.nvlink_gbs);
  EXPECT_EQ(g.inter_node_gbs, h.inter_node_gbs);
  EXPECT_EQ(g.tdp_w, h.tdp_w);
  EXPECT_EQ(g.idle_w, h.idle_w);
  EXPECT_EQ(a.cluster.nodes, b.cluster.nodes);
  EXPECT_EQ(a.cluster.gpus_per_node, b.cluster.gpus_per_node);
  EXPECT_EQ(a.cluster.intra_node_gbs, b.cluster.intra_node_gbs);
  EXPECT_EQ(a.cluster.inter_node_gbs, b.cluster.inter_node_gbs);
  EXPECT_EQ(a.cluster.intra_node_latency_us, b.cluster.intra_node_latency_us);
  EXPECT_EQ(a.cluster.inter_node_latency_us, b.cluster.inter_node_latency_us);
  EXPECT_EQ(a.training.global_batch, b.training.global_batch);
  EXPECT_EQ(a.training.seq_len, b.training.seq_len);
  EXPECT_EQ(a.training.total_tokens, b.training.total_tokens);
}

TEST(ConvertTest, ExampleStudyIsThePresetWorkload) {
  absl::StatusOr<v1::StudySpec> spec = ReadStudySpecFile(
      std::string(TESSERA_SOURCE_DIR) + "/deploy/examples/study.json");
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<Workload> w = WorkloadFromSpec(*spec);
  ASSERT_TRUE(w.ok()) << w.status();
  const Workload expected{*ModelPreset("llama2-7b"),
                          MakeCluster(*GpuPreset("h100-sxm"), 32, 8),
                          TrainingConfig{512, 4096, 1e12}};
  ExpectSameWorkload(*w, expected);
  EXPECT_EQ(w->cluster.world_size(), 256);
  absl::StatusOr<costmodel::SearchOptions> options =
      SearchOptionsFromSpec(spec->search());
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->top, 10);
}

TEST(ConvertTest, ExplicitDimensions) {
  absl::StatusOr<Workload> w = WorkloadFromSpec(Parse(WithModel(
      R"({"layers": 2, "hidden": 64, "heads": 4, "ffn_hidden": 176,
          "vocab": 100})")));
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->model.name, "custom");
  EXPECT_EQ(w->model.layers, 2);
  EXPECT_EQ(w->model.hidden, 64);
  EXPECT_EQ(w->model.kv_heads, 4);  // defaults to heads (MHA)
  EXPECT_EQ(w->model.mlp, MlpKind::kSwiGlu);
  EXPECT_FALSE(w->model.tie_embeddings);
  // Hand count: embedding 100*64; per layer q,o 2*64*64 + k,v 2*64*64 +
  // SwiGLU 3*64*176 + 2 norms 2*64; output 100*64 + final norm 64.
  EXPECT_EQ(
      w->model.ParamCount(),
      100 * 64 + 2 * (4 * 64 * 64 + 3 * 64 * 176 + 2 * 64) + 100 * 64 + 64);
}

TEST(ConvertTest, ExplicitFieldsOverrideAPreset) {
  absl::StatusOr<Workload> w = WorkloadFromSpec(Parse(
      WithModel(R"({"preset": "llama2-70b", "layers": 40, "vocab": 128256})")));
  ASSERT_TRUE(w.ok()) << w.status();
  ModelConfig expected = *ModelPreset("llama2-70b");
  expected.name = "custom";
  expected.layers = 40;
  expected.vocab = 128256;
  ExpectSameModel(w->model, expected);
  // An override that changes nothing keeps the preset's name.
  w = WorkloadFromSpec(Parse(WithModel(R"({"preset": "llama3-8b",
                                           "kv_heads": 8})")));
  ASSERT_TRUE(w.ok()) << w.status();
  ExpectSameModel(w->model, *ModelPreset("llama3-8b"));
}

TEST(ConvertTest, ModelErrorsNameTheField) {
  EXPECT_EQ(ErrorOf(WithModel(R"({"preset": "llama9"})"))
                .rfind("model.preset: unknown preset 'llama9' (known: "
                       "llama2-7b, ",
                       0),
            0u);
  EXPECT_EQ(ErrorOf(WithModel(R"({"layers": 2, "heads": 4,
                                   "ffn_hidden": 8, "vocab": 10})")),
            "model.hidden: required without a preset");
  EXPECT_EQ(ErrorOf(WithModel("{}")).rfind("model: give a preset", 0), 0u);
  EXPECT_EQ(ErrorOf(WithModel(R"({"preset": "llama2-7b", "layers": 0})")),
            "model.layers: must be an integer in [1, 16384], got 0");
  EXPECT_EQ(ErrorOf(WithModel(R"({"preset": "llama2-7b", "heads": 33})"))
                .rfind("model.heads:", 0),
            0u);
  EXPECT_EQ(ErrorOf(WithModel(R"({"preset": "llama2-7b", "kv_heads": 5})"))
                .rfind("model.kv_heads:", 0),
            0u);
  EXPECT_EQ(ErrorOf(WithModel(R"({"preset": "llama2-7b", "mlp": "relu"})"))
                .rfind("model.mlp:", 0),
            0u);
  EXPECT_EQ(ErrorOf(WithModel(R"({"preset": "llama2-7b",
                                   "rope_theta": "NaN"})"))
                .rfind("model.rope_theta:", 0),
            0u);
  EXPECT_EQ(ErrorOf(R"({"cluster": {"nodes": 1}})"),
            "model: required: a preset or explicit dimensions");
}

TEST(ConvertTest, GpuPresetOverridesAndExplicitFigures) {
  absl::StatusOr<Workload> w = WorkloadFromSpec(Parse(
      R"({"model": {"preset": "tiny"},
          "cluster": {"gpu": {"preset": "a100-sxm-80g", "tdp_w": 500},
                      "nodes": 1, "gpus_per_node": 4},
          "training": {"global_batch": 8, "seq_len": 128}})"));
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->cluster.gpu.name, "custom");
  EXPECT_EQ(w->cluster.gpu.tdp_w, 500);
  EXPECT_EQ(w->cluster.gpu.peak_dense_tflops, 312);
  w = WorkloadFromSpec(Parse(
      R"({"model": {"preset": "tiny"},
          "cluster": {"gpu": {"peak_dense_tflops": 100, "memory_bytes": 1e9,
                              "hbm_gbs": 1000, "nvlink_gbs": 200,
                              "inter_node_gbs": 50, "tdp_w": 300},
                      "nodes": 1, "gpus_per_node": 2},
          "training": {"global_batch": 8, "seq_len": 128}})"));
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->cluster.gpu.name, "custom");
  EXPECT_EQ(w->cluster.gpu.memory_bytes, 1000000000);
  EXPECT_EQ(w->cluster.gpu.idle_w, 0);
  // The cluster's links default to the GPU's.
  EXPECT_EQ(w->cluster.intra_node_gbs, 200);
  EXPECT_EQ(w->cluster.inter_node_gbs, 50);
}

TEST(ConvertTest, ClusterAndTrainingErrorsNameTheField) {
  const std::string model = R"("model": {"preset": "llama2-7b"})";
  auto study = [&](const std::string& cluster, const std::string& training) {
    return "{" + model + ", \"cluster\": " + cluster +
           ", \"training\": " + training + "}";
  };
  const std::string training = R"({"global_batch": 64, "seq_len": 2048})";
  EXPECT_EQ(ErrorOf(study(R"({"gpu": {"preset": "h100-sxm"}, "nodes": 0,
                             "gpus_per_node": 8})",
                          training)),
            "cluster.nodes: must be an integer in [1, 131072], got 0");
  EXPECT_EQ(ErrorOf(study(R"({"gpu": {"preset": "h100-sxm"}, "nodes": 2})",
                          training)),
            "cluster.gpus_per_node: must be an integer in [1, 1024], got 0");
  EXPECT_EQ(ErrorOf(study(R"({"gpu": {"preset": "b300"}, "nodes": 2,
                             "gpus_per_node": 8})",
                          training))
                .rfind("cluster.gpu.preset: unknown preset 'b300' (known: "
                       "h100-sxm, ",
                       0),
            0u);
  EXPECT_EQ(ErrorOf(study(R"({"nodes": 2, "gpus_per_node": 8})", training))
                .rfind("cluster.gpu: required", 0),
            0u);
  EXPECT_EQ(ErrorOf(study(R"({"gpu": {"preset": "h100-sxm", "idle_w": 800},
                             "nodes": 2, "gpus_per_node": 8})",
                          training))
                .rfind("cluster.gpu.idle_w: ", 0),
            0u);
  EXPECT_EQ(ErrorOf(study(R"({"gpu": {"peak_dense_tflops": 100},
                             "nodes": 2, "gpus_per_node": 8})",
                          training)),
            "cluster.gpu.memory_bytes: required without a preset");
  EXPECT_EQ(ErrorOf(study(R"({"gpu": {"preset": "h100-sxm",
                                      "peak_dense_tflops": "Infinity"},
                             "nodes": 2, "gpus_per_node": 8})",
                          training))
                .rfind("cluster.gpu.peak_dense_tflops: must be a finite", 0),
            0u);
  EXPECT_EQ(ErrorOf(study(R"({"gpu": {"preset": "h100-sxm"}, "nodes": 2,
                             "gpus_per_node": 8, "inter_node_gbs": -1})",
                          training))
                .rfind("cluster.inter_node_gbs: ", 0),
            0u);
  const std::string cluster =
      R"({"gpu": {"preset": "h100-sxm"}, "nodes": 2, "gpus_per_node": 8})";
  EXPECT_EQ(ErrorOf(study(cluster, R"({"seq_len": 2048})")),
            "training.global_batch: must be an integer in [1, 16777216], got "
            "0");
  EXPECT_EQ(ErrorOf(study(cluster, R"({"global_batch": 8, "seq_len": -1})")),
            "training.seq_len: must be an integer in [1, 16777216], got -1");
  EXPECT_EQ(ErrorOf(study(cluster, R"({"global_batch": 8, "seq_len": 16,
                                      "total_tokens": -5})"))
                .rfind("training.total_tokens: ", 0),
            0u);
  EXPECT_EQ(ErrorOf(study(cluster, R"({"global_batch": 8, "seq_len": 16})")),
            "");
}

TEST(ConvertTest, TrainingStackOptionsAndPrecision) {
  auto study = [](const std::string& training) {
    return Parse(R"({"model": {"preset": "llama3-8b"},
        "cluster": {"gpu": {"preset": "h100-sxm"}, "nodes": 2,
                    "gpus_per_node": 8},
        "training": )" + training + "}");
  };
  absl::StatusOr<Workload> w = CheckedWorkloadFromSpec(study(
      R"({"global_batch": 64, "seq_len": 8192, "stack": "torchtitan",
          "stack_options": ["async-tp", "no-compile"], "precision": "fp8"})"));
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->training.stack, "torchtitan");
  EXPECT_EQ(w->training.stack_options,
            (std::vector<std::string>{"async-tp", "no-compile"}));
  EXPECT_EQ(w->training.precision, Precision::kFp8);
  // Absent: the default stack, its default options, bf16.
  absl::StatusOr<Workload> d =
      CheckedWorkloadFromSpec(study(R"({"global_batch": 64, "seq_len": 8192})"));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->training.stack, kDefaultTrainingStack);
  EXPECT_TRUE(d->training.stack_options.empty());
  EXPECT_EQ(d->training.precision, Precision::kBf16);
  // Round trip through the spec.
  absl::StatusOr<Workload> back = CheckedWorkloadFromSpec(SpecFromWorkload(*w));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->training.stack, "torchtitan");
  EXPECT_EQ(back->training.stack_options, w->training.stack_options);
  EXPECT_EQ(back->training.precision, Precision::kFp8);

  const struct {
    const char* training;
    const char* error;
  } bad[] = {
      {R"({"global_batch": 8, "seq_len": 16, "stack": "jax"})",
       "training.stack: unknown stack 'jax' (known: deepspeed, "
       "megatron-2021, megatron-core, nanotron, pytorch-ddp, pytorch-fsdp, "
       "tessera, "
       "torchtitan)"},
      {R"({"global_batch": 8, "seq_len": 16, "stack": "torchtitan",
           "stack_options": ["turbo"]})",
       "training.stack_options: the torchtitan stack has no option 'turbo' "
       "(its options: compile, eager-loss, async-tp, float8-rowwise, "
       "selective-layer)"},
      {R"({"global_batch": 8, "seq_len": 16, "precision": "fp4"})",
       "training.precision: 'fp4' is not bf16 or fp8"},
      {R"({"global_batch": 8, "seq_len": 16, "stack": "deepspeed",
           "precision": "fp8"})",
       "training.precision: the deepspeed stack does not train in fp8"},
  };
  for (const auto& b : bad) {
    EXPECT_EQ(CheckedWorkloadFromSpec(study(b.training)).status().message(),
              b.error)
        << b.training;
  }
  // fp8 on a GPU without fp8 tensor cores.
  EXPECT_EQ(WorkloadFromSpec(
                Parse(R"({"model": {"preset": "llama3-8b"},
                          "cluster": {"gpu": {"preset": "a100-sxm-80g"},
                                      "nodes": 1, "gpus_per_node": 8},
                          "training": {"global_batch": 8, "seq_len": 16,
                                       "precision": "fp8"}})"))
                .status()
                .message(),
            "training.precision: fp8 needs fp8 tensor cores, and gpu "
            "'a100-sxm-80g' has none (gpu.peak_fp8_tflops is 0)");
  // A GPU's architecture and fp8 peak.
  absl::StatusOr<Workload> custom = WorkloadFromSpec(Parse(
      R"({"model": {"preset": "llama3-8b"},
          "cluster": {"gpu": {"preset": "a100-sxm-80g",
                              "peak_fp8_tflops": 600,
                              "architecture": "hopper"},
                      "nodes": 1, "gpus_per_node": 8},
          "training": {"global_batch": 8, "seq_len": 16}})"));
  ASSERT_TRUE(custom.ok()) << custom.status();
  EXPECT_EQ(custom->cluster.gpu.architecture, "hopper");
  EXPECT_EQ(custom->cluster.gpu.peak_fp8_tflops, 600);
  EXPECT_EQ(custom->cluster.gpu.name, "custom");
  EXPECT_EQ(WorkloadFromSpec(
                Parse(R"({"model": {"preset": "llama3-8b"},
                          "cluster": {"gpu": {"preset": "h100-sxm",
                                              "architecture": "tpu"},
                                      "nodes": 1, "gpus_per_node": 8},
                          "training": {"global_batch": 8, "seq_len": 16}})"))
                .status()
                .message(),
            "cluster.gpu.architecture: 'tpu' is not one of volta, ampere, "
            "hopper, blackwell, cpu or empty (unknown)");
}

TEST(ConvertTest, ClusterOverrides) {
  absl::StatusOr<Workload> w = WorkloadFromSpec(Parse(
      R"({"model": {"preset": "llama2-7b"},
          "cluster": {"gpu": {"preset": "h100-sxm"}, "nodes": 4,
                      "gpus_per_node": 8, "intra_node_gbs": 300,
                      "inter_node_gbs": 100, "inter_node_latency_us": 12,
                      "intra_node_latency_us": 0},
          "training": {"global_batch": 64, "seq_len": 2048}})"));
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->cluster.intra_node_gbs, 300);
  EXPECT_EQ(w->cluster.inter_node_gbs, 100);
  EXPECT_EQ(w->cluster.inter_node_latency_us, 12);
  EXPECT_EQ(w->cluster.intra_node_latency_us, 0);
  EXPECT_EQ(w->cluster.gpu.name, "h100-sxm");  // the GPU itself is unchanged
}

TEST(ConvertTest, SearchOptions) {
  v1::SearchOptions s;
  EXPECT_EQ(SearchOptionsFromSpec(s)->top, 10);
  s.set_top(0);
  EXPECT_EQ(SearchOptionsFromSpec(s)->top, 0);
  s.set_top(-1);
  EXPECT_EQ(SearchOptionsFromSpec(s).status().message(),
            "search.top: must be 0 (every feasible layout) or positive, got "
            "-1");
}

TEST(ConvertTest, WorkloadRoundTripsThroughSpecAndJson) {
  std::vector<Workload> workloads;
  for (const std::string& m : ModelPresetNames()) {
    for (const std::string& g : GpuPresetNames()) {
      workloads.push_back(Workload{*ModelPreset(m),
                                   MakeCluster(*GpuPreset(g), 3, 4),
                                   TrainingConfig{24, 512, 0}});
    }
  }
  Workload custom = workloads.front();
  custom.model.name = "custom";
  custom.model.layers = 3;
  custom.model.mlp = MlpKind::kGelu;
  custom.model.tie_embeddings = true;
  custom.model.rope_theta = 123456.5;
  custom.cluster.gpu.name = "custom";
  custom.cluster.gpu.memory_bytes = (int64_t{1} << 40) + 3;
  custom.cluster.gpu.tdp_w = 650.25;
  custom.cluster.inter_node_latency_us = 9.75;
  custom.training.total_tokens = 1.5e13;
  workloads.push_back(custom);
  for (const Workload& w : workloads) {
    SCOPED_TRACE(w.model.name + " on " + w.cluster.gpu.name);
    const v1::StudySpec spec = SpecFromWorkload(w);
    absl::StatusOr<Workload> back = WorkloadFromSpec(spec);
    ASSERT_TRUE(back.ok()) << back.status();
    ExpectSameWorkload(*back, w);
    // Through the JSON mapping (int64 written as strings) too.
    std::string json;
    ASSERT_TRUE(google::protobuf::util::MessageToJsonString(spec, &json).ok());
    absl::StatusOr<v1::StudySpec> reread = StudySpecFromJson(json, "printed");
    ASSERT_TRUE(reread.ok()) << reread.status();
    back = WorkloadFromSpec(*reread);
    ASSERT_TRUE(back.ok()) << back.status();
    ExpectSameWorkload(*back, w);
  }
}

TEST(ConvertTest, LayoutRoundTripsAndDefaults) {
  for (const char* text :
       {"tp=1",
        "tp=8,sp=1,pp=4,vpp=2,cp=2,dp=16,zero=1,shard_group=8,"
        "micro_batch=2,grad_accum=16,recompute=selective",
        "zero=3,recompute=full,micro_batch=4", "pp=2,grad_accum=8,dp=3"}) {
    SCOPED_TRACE(text);
    absl::StatusOr<Layout> layout = ParseLayout(text);
    ASSERT_TRUE(layout.ok()) << layout.status();
    absl::StatusOr<Layout> back = LayoutFromProto(LayoutToProto(*layout));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, *layout);
  }
  // An empty message is the default layout (degrees 1, the rest derived).
  absl::StatusOr<Layout> empty = LayoutFromProto(v1::Layout());
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, Layout());
  EXPECT_EQ(LayoutToProto(Layout()).recompute(), "none");
}

TEST(ConvertTest, LayoutErrorsNameTheField) {
  v1::Layout p;
  p.set_tp(-2);
  EXPECT_EQ(LayoutFromProto(p).status().message(),
            "layout.tp: must be an integer in [0 (default), 1048576], got -2");
  p = v1::Layout();
  p.set_micro_batch(int64_t{1} << 40);
  EXPECT_EQ(
      LayoutFromProto(p).status().message().rfind("layout.micro_batch:", 0),
      0u);
  p = v1::Layout();
  p.set_zero(4);
  EXPECT_EQ(LayoutFromProto(p).status().message(),
            "layout.zero: must be 0, 1, 2 or 3, got 4");
  p = v1::Layout();
  p.set_recompute("some");
  EXPECT_EQ(LayoutFromProto(p).status().message().rfind("layout.recompute:", 0),
            0u);
}

// A prediction whose every field differs, so a swapped field shows.
costmodel::Prediction DistinctPrediction(double base, bool full_run) {
  costmodel::Prediction p;
  double v = base;
  for (double* f : {&p.step_time_s,
                    &p.tokens_per_s,
                    &p.tokens_per_s_per_gpu,
                    &p.tflops_per_gpu,
                    &p.mfu,
                    &p.memory_gib_per_gpu,
                    &p.memory.weights_bytes,
                    &p.memory.master_weights_bytes,
                    &p.memory.gradients_bytes,
                    &p.memory.optimizer_bytes,
                    &p.memory.activations_bytes,
                    &p.memory.gathered_params_bytes,
                    &p.memory.overhead_bytes,
                    &p.memory.total_bytes,
                    &p.compute_s,
                    &p.comm_s,
                    &p.exposed_comm_s,
                    &p.bubble_s,
                    &p.tp_comm_s,
                    &p.pp_comm_s,
                    &p.dp_comm_s,
                    &p.cp_comm_s,
                    &p.tp_exposed_s,
                    &p.pp_exposed_s,
                    &p.dp_exposed_s,
                    &p.cp_exposed_s,
                    &p.overlap_slowdown_s,
                    &p.host_wait_s,
                    &p.watts_per_gpu,
                    &p.tokens_per_joule}) {
    *f = v;
    v += 1.25;
  }
  if (full_run) p.full_run = costmodel::FullRunPrediction{v, v + 1, v + 2};
  return p;
}

void ExpectSamePrediction(const costmodel::Prediction& a,
                          const costmodel::Prediction& b) {
  const costmodel::Prediction* ps[] = {&a, &b};
  std::vector<double> fields[2];
  for (int i = 0; i < 2; ++i) {
    const costmodel::Prediction& p = *ps[i];
    fields[i] = {p.step_time_s,
                 p.tokens_per_s,
                 p.tokens_per_s_per_gpu,
                 p.tflops_per_gpu,
                 p.mfu,
                 p.memory_gib_per_gpu,
                 p.memory.weights_bytes,
                 p.memory.master_weights_bytes,
                 p.memory.gradients_bytes,
                 p.memory.optimizer_bytes,
                 p.memory.activations_bytes,
                 p.memory.gathered_params_bytes,
                 p.memory.overhead_bytes,
                 p.memory.total_bytes,
                 p.compute_s,
                 p.comm_s,
                 p.exposed_comm_s,
                 p.bubble_s,
                 p.tp_comm_s,
                 p.pp_comm_s,
                 p.dp_comm_s,
                 p.cp_comm_s,
                 p.tp_exposed_s,
                 p.pp_exposed_s,
                 p.dp_exposed_s,
                 p.cp_exposed_s,
                 p.overlap_slowdown_s,
                 p.host_wait_s,
                 p.watts_per_gpu,
                 p.tokens_per_joule};
  }
  EXPECT_EQ(fields[0], fields[1]);
  ASSERT_EQ(a.full_run.has_value(), b.full_run.has_value());
  if (a.full_run) {
    EXPECT_EQ(a.full_run->days, b.full_run->days);
    EXPECT_EQ(a.full_run->energy_mwh, b.full_run->energy_mwh);
    EXPECT_EQ(a.full_run->gpu_hours, b.full_run->gpu_hours);
  }
}

TEST(ConvertTest, PredictionRoundTrips) {
  for (bool full_run : {false, true}) {
    const costmodel::Prediction p = DistinctPrediction(0.5, full_run);
    const v1::Prediction proto = PredictionToProto(p);
    EXPECT_EQ(proto.tokens_per_joule(), p.tokens_per_joule);
    EXPECT_EQ(proto.memory_breakdown().activations_bytes(),
              p.memory.activations_bytes);
    EXPECT_EQ(proto.has_full_run(), full_run);
    ExpectSamePrediction(PredictionFromProto(proto), p);
  }
}

costmodel::LayoutEvaluation Evaluation(const char* layout, bool feasible,
                                     double base) {
  costmodel::LayoutEvaluation e;
  e.layout = *ParseLayout(layout);
  e.feasible = feasible;
  e.reason = feasible ? "" : "memory: needs more";
  e.prediction = DistinctPrediction(base, true);
  return e;
}

TEST(ConvertTest, SearchResultRoundTrips) {
  costmodel::SearchResult r;
  r.searched = 1234;
  r.scored = 789;
  r.feasible = 56;
  r.elapsed_ms = 7.5;
  r.candidates = {Evaluation("tp=2,dp=4,grad_accum=2", true, 1),
                  Evaluation("tp=1,dp=8,zero=3", true, 100)};
  r.best_throughput = r.candidates[0];
  r.best_energy = r.candidates[1];
  r.pareto = {r.candidates[0], r.candidates[1]};
  r.rejected = {{"memory", 100}, {"layout.tp", 7}};
  absl::StatusOr<costmodel::SearchResult> back =
      SearchResultFromPlanResponse(PlanResponseFromResult(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->searched, 1234);
  EXPECT_EQ(back->scored, 789);
  EXPECT_EQ(back->feasible, 56);
  EXPECT_EQ(back->elapsed_ms, 7.5);
  ASSERT_EQ(back->candidates.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back->candidates[i].layout, r.candidates[i].layout);
    EXPECT_TRUE(back->candidates[i].feasible);
    ExpectSamePrediction(back->candidates[i].prediction,
                         r.candidates[i].prediction);
  }
  EXPECT_EQ(back->best_throughput.layout, r.candidates[0].layout);
  EXPECT_EQ(back->best_energy.layout, r.candidates[1].layout);
  ASSERT_EQ(back->pareto.size(), 2u);
  EXPECT_EQ(back->pareto[1].layout, r.candidates[1].layout);
  EXPECT_EQ(back->rejected, r.rejected);

  // Nothing feasible: no best layouts are sent.
  costmodel::SearchResult none;
  none.searched = 10;
  none.rejected = {{"memory", 10}};
  const v1::PlanResponse response = PlanResponseFromResult(none);
  EXPECT_FALSE(response.has_best_throughput());
  EXPECT_FALSE(response.has_best_energy());
  back = SearchResultFromPlanResponse(response);
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->best_throughput.feasible);
  EXPECT_EQ(back->rejected.at("memory"), 10);

  costmodel::LayoutEvaluation infeasible = Evaluation("tp=3", false, 2);
  absl::StatusOr<costmodel::LayoutEvaluation> e =
      EvaluationFromProto(EvaluationToProto(infeasible));
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(e->feasible);
  EXPECT_EQ(e->reason, "memory: needs more");
}

}  // namespace
}  // namespace tessera
