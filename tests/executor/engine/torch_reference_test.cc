// The CPU executor against an independent implementation: PyTorch (Debian's
// python3-torch, float64) builds the same Llama from the same weights and
// tokens (torch_reference.py); loss and every gradient agree within 1e-4
// relative (per tensor, in the 2-norm).
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "executor/comm/run_ranks.h"
#include "executor/cpu/cpu_backend.h"
#include "executor/engine/param_export.h"
#include "executor/engine/token_data.h"
#include "gtest/gtest.h"
#include "tests/executor/engine/engine_test_util.h"
#include "tests/executor/engine/torch_oracle.h"

namespace tessera::executor {
namespace {

struct Case {
  const char* layout;
  int64_t global_batch;
  int64_t seq_len;
};

class TorchReferenceTest : public ::testing::TestWithParam<Case> {};

TEST_P(TorchReferenceTest, LossAndGradientsAgree) {
  if (!testing::TorchAvailable()) GTEST_SKIP() << testing::kTorchMissing;
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

  absl::StatusOr<testing::TorchGradients> torch = testing::RunTorchReference(
      model, weights, data, c.global_batch, c.seq_len);
  ASSERT_TRUE(torch.ok()) << torch.status();
  EXPECT_NEAR(loss / torch->loss, 1.0, 1e-4) << loss << " vs " << torch->loss;
  for (const auto& [name, g] : grads) {
    const std::vector<float>& want = torch->grads.at(name);
    double norm = 0;
    for (float v : want) norm += static_cast<double>(v) * v;
    ASSERT_GT(norm, 0) << name << " has no gradient in the reference";
    EXPECT_LE(testing::RelativeNormError(g.values, want), 1e-4) << name;
  }
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
