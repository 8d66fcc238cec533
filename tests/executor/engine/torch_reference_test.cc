// The CPU executor against an independent implementation: PyTorch (Debian's
// python3-torch, float64) builds the same Llama from the same weights and
// tokens (torch_reference.py); loss and every gradient agree within 1e-4
// relative (per tensor, in the 2-norm).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "executor/comm/run_ranks.h"
#include "executor/cpu/cpu_backend.h"
#include "executor/engine/param_export.h"
#include "executor/engine/token_data.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tessera::executor {
namespace {

namespace fs = std::filesystem;

constexpr char kPython[] = "/usr/bin/python3";

bool TorchAvailable() {
  return std::system(absl::StrCat(kPython,
                                  " -c 'import torch, numpy' "
                                  "> /dev/null 2>&1")
                         .c_str()) == 0;
}

struct Case {
  const char* layout;
  int64_t global_batch;
  int64_t seq_len;
};

class TorchReferenceTest : public ::testing::TestWithParam<Case> {};

TEST_P(TorchReferenceTest, LossAndGradientsAgree) {
  if (!TorchAvailable()) {
    GTEST_SKIP() << kPython << " cannot import torch and numpy "
                 << "(deploy/install-deps.sh installs python3-torch)";
  }
  const Case& c = GetParam();
  const ModelConfig model = *ModelPreset("tiny");
  absl::StatusOr<Layout> layout =
      ResolveLayout(*ParseLayout(c.layout), 1, c.global_batch);
  ASSERT_TRUE(layout.ok()) << layout.status();
  SyntheticTokens data(/*seed=*/11, model.vocab);
  EngineConfig config{model, *layout,       c.seq_len, c.global_batch,
                      99,    AdamWConfig{}, &data};
  GlobalTensors weights, grads;
  double loss = 0;
  absl::Mutex mu;
  const std::vector<absl::Status> statuses =
      RunRanks(1, [&](int, Communicator& world) -> absl::Status {
        CpuBackend backend;
        TESSERA_ASSIGN_OR_RETURN(auto engine,
                                 RankEngine::Create(config, backend, world));
        ExportHeld(*engine, backend, Held::kWeights, &weights, &mu);
        TESSERA_ASSIGN_OR_RETURN(loss, engine->ForwardBackward());
        ExportHeld(*engine, backend, Held::kGradients, &grads, &mu);
        return absl::OkStatus();
      });
  ASSERT_TRUE(FirstFailure(statuses).ok()) << FirstFailure(statuses);

  const fs::path dir =
      fs::path(::testing::TempDir()) /
      absl::StrCat("torch_ref_", getpid(), "_", c.global_batch);
  fs::create_directories(dir);
  nlohmann::json manifest;
  manifest["model"] = {
      {"layers", model.layers},     {"hidden", model.hidden},
      {"heads", model.heads},       {"kv_heads", model.kv_heads},
      {"norm_eps", model.norm_eps}, {"rope_theta", model.rope_theta}};
  for (const auto& [name, t] : weights) {
    const std::string file = name + ".f32";
    std::ofstream(dir / file, std::ios::binary)
        .write(reinterpret_cast<const char*>(t.values.data()),
               static_cast<std::streamsize>(t.values.size() * sizeof(float)));
    manifest["params"].push_back(
        {{"name", name}, {"rows", t.rows}, {"cols", t.cols}, {"file", file}});
  }
  std::vector<int32_t> seq(c.seq_len + 1);
  for (int64_t i = 0; i < c.global_batch; ++i) {
    data.Sample(i, c.seq_len + 1, seq.data());
    manifest["tokens"].push_back(
        std::vector<int32_t>(seq.begin(), seq.end() - 1));
    manifest["targets"].push_back(
        std::vector<int32_t>(seq.begin() + 1, seq.end()));
  }
  std::ofstream(dir / "manifest.json") << manifest.dump();
  const std::string script = absl::StrCat(
      TESSERA_SOURCE_DIR, "/tests/executor/engine/torch_reference.py");
  ASSERT_EQ(std::system(
                absl::StrCat(kPython, " ", script, " ", dir.string()).c_str()),
            0);

  const double torch_loss =
      nlohmann::json::parse(std::ifstream(dir / "out" / "loss.json"))["loss"];
  EXPECT_NEAR(loss / torch_loss, 1.0, 1e-4) << loss << " vs " << torch_loss;
  for (const auto& [name, g] : grads) {
    std::vector<float> want(g.values.size());
    std::ifstream in(dir / "out" / (name + ".grad"), std::ios::binary);
    in.read(reinterpret_cast<char*>(want.data()),
            static_cast<std::streamsize>(want.size() * sizeof(float)));
    ASSERT_TRUE(in) << name;
    double diff = 0, norm = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      diff += std::pow(static_cast<double>(g.values[i]) - want[i], 2);
      norm += std::pow(static_cast<double>(want[i]), 2);
    }
    ASSERT_GT(norm, 0) << name << " has no gradient in the reference";
    EXPECT_LE(std::sqrt(diff / norm), 1e-4) << name;
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Batches, TorchReferenceTest,
                         ::testing::Values(Case{"micro_batch=4", 4, 64},
                                           Case{"micro_batch=2,recompute=full",
                                                4, 32}),
                         [](const ::testing::TestParamInfo<Case>& case_info) {
                           return absl::StrCat(
                               "batch", case_info.param.global_batch, "_seq",
                               case_info.param.seq_len, "_", case_info.index);
                         });

}  // namespace
}  // namespace tessera::executor
