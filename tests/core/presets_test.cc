// The GPU and model presets as data (core/presets/*.json): the shipped files
// hold the figures their sources give (checked against the values written
// here by hand from those sources), and a broken file is refused with the
// file, the entry and the field named.
#include <string>

#include "core/gpu.h"
#include "core/model.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

TEST(PresetsTest, TheShippedGpuPresetsHoldTheirDatasheetFigures) {
  const absl::StatusOr<GpuSpec> h100 = GpuPreset("h100-sxm");
  ASSERT_TRUE(h100.ok()) << h100.status();
  EXPECT_EQ(h100->peak_dense_tflops, 989.4);
  EXPECT_EQ(h100->peak_fp8_tflops, 1978.9);
  EXPECT_EQ(h100->memory_bytes, 81559 * kMiB);
  EXPECT_EQ(h100->hbm_gbs, 3350);
  EXPECT_EQ(h100->nvlink_gbs, 450);
  EXPECT_EQ(h100->inter_node_gbs, 400);
  EXPECT_EQ(h100->tdp_w, 700);
  EXPECT_EQ(h100->idle_w, 70);
  EXPECT_EQ(h100->architecture, "hopper");
  // The 500 W part: the SXM peaks x 0.85, exactly.
  const absl::StatusOr<GpuSpec> meta = GpuPreset("h100-sxm-96g-500w");
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->peak_dense_tflops, 989.4 * 0.85);
  EXPECT_EQ(meta->peak_fp8_tflops, 1978.9 * 0.85);
  EXPECT_EQ(meta->memory_bytes, 96000000000);
  const absl::StatusOr<GpuSpec> v100 = GpuPreset("V100-SXM-32G");
  ASSERT_TRUE(v100.ok()) << v100.status();
  EXPECT_EQ(v100->peak_fp8_tflops, 0);
  EXPECT_EQ(v100->architecture, "volta");
  EXPECT_EQ(GpuPresetNames(),
            (std::vector<std::string>{"h100-sxm", "h100-sxm-96g-500w",
                                      "h200-sxm", "a100-sxm-80g",
                                      "a100-sxm-40g", "v100-sxm-32g"}));
}

TEST(PresetsTest, TheShippedModelPresetsHoldTheirPublishedShapes) {
  const absl::StatusOr<ModelConfig> m = ModelPreset("llama3-405b");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->layers, 126);
  EXPECT_EQ(m->hidden, 16384);
  EXPECT_EQ(m->heads, 128);
  EXPECT_EQ(m->kv_heads, 8);
  EXPECT_EQ(m->ffn_hidden, 53248);
  EXPECT_EQ(m->vocab, 128256);
  EXPECT_EQ(m->mlp, MlpKind::kSwiGlu);
  EXPECT_FALSE(m->tie_embeddings);
  EXPECT_EQ(m->rope_theta, 500000);
  const absl::StatusOr<ModelConfig> gpt = ModelPreset("gpt3-175b");
  ASSERT_TRUE(gpt.ok()) << gpt.status();
  EXPECT_EQ(gpt->mlp, MlpKind::kGelu);
  EXPECT_TRUE(gpt->tie_embeddings);
  EXPECT_EQ(gpt->vocab, 51200);
  EXPECT_EQ(ModelPresetNames().size(), 10u);
  EXPECT_EQ(ModelPreset("llama9").status().code(), absl::StatusCode::kNotFound);
}

std::string GpuFile(const std::string& entry) {
  return R"({"description": "test", "gpus": [)" + entry + "]}";
}

constexpr char kGoodGpu[] =
    R"({"name": "x1", "architecture": "hopper", "peak_dense_tflops": 100,
        "peak_fp8_tflops": 0, "memory_mib": 1024, "hbm_gbs": 1000,
        "nvlink_gbs": 100, "inter_node_gbs": 100, "tdp_w": 300,
        "idle_w": 30, "source": "made up for the test"})";

TEST(PresetsTest, ABrokenGpuFileIsRefusedNamingTheEntryAndField) {
  const absl::StatusOr<std::vector<GpuSpec>> good =
      ParseGpuPresets("gpus.json", GpuFile(kGoodGpu));
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->at(0).memory_bytes, 1024 * kMiB);

  auto error = [](const std::string& text) {
    return std::string(ParseGpuPresets("gpus.json", text).status().message());
  };
  auto with = [](const std::string& from, const std::string& to) {
    std::string s = kGoodGpu;
    s.replace(s.find(from), from.size(), to);
    return GpuFile(s);
  };
  EXPECT_EQ(error(with(R"("hbm_gbs": 1000)", R"("hbm_gbs": "fast")")),
            "gpus.json: gpus[0] (x1).hbm_gbs: must be a finite number");
  EXPECT_EQ(error(with(R"("tdp_w": 300)", R"("tpd_w": 300)")),
            "gpus.json: gpus[0] (x1).tpd_w: is not a field of a preset");
  EXPECT_EQ(error(with(R"("memory_mib": 1024)",
                       R"("memory_mib": 1024, "memory_bytes": 5)")),
            "gpus.json: gpus[0] (x1).memory_mib: give memory_mib or "
            "memory_bytes, not both");
  EXPECT_EQ(error(with(R"("idle_w": 30)", R"("idle_w": 300)")),
            "gpus.json: gpus[0] (x1).idle_w: must be in [0, tdp_w=300), got "
            "300");
  EXPECT_EQ(error(with(R"(, "source": "made up for the test")", "")),
            "gpus.json: gpus[0] (x1).source: must be a non-empty string");
  EXPECT_EQ(error(GpuFile(std::string(kGoodGpu) + "," + kGoodGpu)),
            "gpus.json: gpus[1] (x1).name: 'x1' is given twice");
  EXPECT_EQ(error("{\"gpus\": [}"), "gpus.json: not a JSON object");
  EXPECT_EQ(error(R"({"gpus": []})"),
            "gpus.json: gpus: must be a non-empty array");
}

TEST(PresetsTest, ABrokenModelFileIsRefusedNamingTheEntryAndField) {
  const std::string good =
      R"({"name": "m1", "layers": 2, "hidden": 64, "heads": 4,
          "kv_heads": 2, "ffn_hidden": 128, "vocab": 100, "mlp": "swiglu",
          "tie_embeddings": false, "rope_theta": 10000, "source": "test"})";
  auto file = [](const std::string& entry) {
    return R"({"models": [)" + entry + "]}";
  };
  ASSERT_TRUE(ParseModelPresets("models.json", file(good)).ok());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return std::string(
        ParseModelPresets("models.json", file(s)).status().message());
  };
  EXPECT_EQ(with(R"("kv_heads": 2)", R"("kv_heads": 3)"),
            "models.json: models[0] (m1).kv_heads: 3 does not divide heads 4");
  EXPECT_EQ(with(R"("mlp": "swiglu")", R"("mlp": "relu")"),
            "models.json: models[0] (m1).mlp: 'relu' is not swiglu or gelu");
  EXPECT_EQ(with(R"("layers": 2)", R"("layers": 2.5)"),
            "models.json: models[0] (m1).layers: must be an integer");
}

}  // namespace
}  // namespace tessera
