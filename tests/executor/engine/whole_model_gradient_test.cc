// Finite differences of the whole model: the engine's gradient of the loss
// (embedding through cross-entropy, every layer, one rank) against central
// differences of the loss itself, at the largest-gradient elements of every
// weight tensor. The engine computes in fp32, so the model is small and the
// step h = 1e-2: the loss's rounding (~1e-7 relative) then contributes about
// 1e-5 to a difference quotient, well under the 3% tolerance for elements
// whose gradient exceeds 1e-3, and the h^2 truncation error is of the same
// order. A wrong backward is off by far more (tested: scaling any backward
// contribution by 0.9 fails here).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/status_macros.h"
#include "executor/comm/run_ranks.h"
#include "executor/cpu/cpu_backend.h"
#include "executor/engine/param_export.h"
#include "executor/engine/token_data.h"
#include "gtest/gtest.h"

namespace tessera::executor {
namespace {

ModelConfig SmallModel() {
  ModelConfig m;
  m.name = "custom";
  m.layers = 2;
  m.hidden = 16;
  m.heads = 4;
  m.kv_heads = 2;
  m.ffn_hidden = 24;
  m.vocab = 32;
  return m;
}

TEST(WholeModelGradientTest, MatchesCentralDifferencesOfTheLoss) {
  const ModelConfig model = SmallModel();
  ASSERT_TRUE(ValidateModel(model).ok());
  const Layout layout = *ResolveLayout(Layout{.micro_batch = 2}, 1, 2);
  SyntheticTokens data(/*seed=*/5, model.vocab);
  const EngineConfig config{
      model,       layout,        /*seq_len=*/8, /*global_batch=*/2,
      /*seed=*/77, AdamWConfig{}, &data};
  std::map<std::string, int> checked;  // weight -> elements compared
  std::vector<std::string> failures;
  const absl::Status status =
      FirstFailure(RunRanks(1, [&](int, Communicator& world) -> absl::Status {
        CpuBackend backend;
        TESSERA_ASSIGN_OR_RETURN(auto engine,
                                 RankEngine::Create(config, backend, world));
        const ModelShard& shard = engine->shard();
        const ParamStore& params = engine->params();
        // A larger init than Llama's 0.02 (x10: std 0.2) so that every
        // weight, Wq and Wk included, moves the loss measurably. Zero 0 on the
        // CPU: the master weights are the compute weights.
        for (size_t u = 0; u < shard.units.size(); ++u) {
          float* w = params.master(static_cast<int>(u)).data_as<float>();
          for (const ParamSegment& seg : shard.units[u].segments) {
            if (!seg.decay) continue;  // norms stay at 1
            for (int64_t i = 0; i < seg.numel(); ++i) w[seg.offset + i] *= 10;
          }
        }
        GlobalTensors grads;
        absl::Mutex mu;
        TESSERA_ASSIGN_OR_RETURN(double loss0, engine->ForwardBackward());
        EXPECT_TRUE(std::isfinite(loss0));
        ExportHeld(*engine, backend, Held::kGradients, &grads, &mu);
        for (size_t u = 0; u < shard.units.size(); ++u) {
          float* w = params.master(static_cast<int>(u)).data_as<float>();
          for (const ParamSegment& seg : shard.units[u].segments) {
            const std::vector<float>& g = grads[seg.name].values;
            // The 3 largest-gradient elements of this weight.
            std::vector<int64_t> order(seg.numel());
            for (int64_t i = 0; i < seg.numel(); ++i) order[i] = i;
            std::partial_sort(order.begin(), order.begin() + 3, order.end(),
                              [&](int64_t a, int64_t b) {
                                return std::abs(g[a]) > std::abs(g[b]);
                              });
            for (int k = 0; k < 3; ++k) {
              const int64_t i = order[k];
              const double analytic = g[i];
              if (std::abs(analytic) < 1e-3) continue;
              const double h = 1e-2;
              float& x = w[seg.offset + i];
              const float saved = x;
              x = saved + static_cast<float>(h);
              TESSERA_ASSIGN_OR_RETURN(double plus, engine->ForwardBackward());
              x = saved - static_cast<float>(h);
              TESSERA_ASSIGN_OR_RETURN(double minus, engine->ForwardBackward());
              x = saved;
              const double numeric = (plus - minus) / (2 * h);
              ++checked[seg.name];
              if (std::abs(numeric - analytic) > 0.03 * std::abs(analytic)) {
                failures.push_back(seg.name + "[" + std::to_string(i) +
                                   "]: engine " + std::to_string(analytic) +
                                   " vs finite differences " +
                                   std::to_string(numeric));
              }
            }
          }
        }
        return absl::OkStatus();
      }));
  ASSERT_TRUE(status.ok()) << status;
  // Every weight tensor of the model took part: the embedding, 9 per layer,
  // the final norm and the output projection.
  EXPECT_EQ(checked.size(), 1u + 2 * 9 + 2);
  for (const auto& [name, n] : checked) EXPECT_GE(n, 1) << name;
  for (const std::string& f : failures) ADD_FAILURE() << f;
}

}  // namespace
}  // namespace tessera::executor
