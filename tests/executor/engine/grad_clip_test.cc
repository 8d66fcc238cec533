// Gradient clipping (PyTorch's clip_grad_norm_, Llama's max norm 1.0) under
// every kind of parallelism. The global norm must be the single-rank norm
// whatever the layout: each gradient element counted once, not once per
// data-parallel replica, HSDP replica or tp copy of a norm weight. The
// clipped training must match the single-rank one within 1e-5, as the
// unclipped does (layout_equivalence_test.cc).
#include <cmath>

#include "gtest/gtest.h"
#include "tests/executor/engine/engine_test_util.h"

namespace tessera::executor::testing {
namespace {

// Below the tiny model's gradient norms (about 1 to 3): every step clips.
constexpr double kMaxNorm = 0.05;

const EngineRun& ClippedReference() {
  static const EngineRun* run = [] {
    absl::StatusOr<EngineRun> r =
        RunEngine("micro_batch=8", 1, {.max_grad_norm = kMaxNorm});
    EXPECT_TRUE(r.ok()) << r.status();
    return new EngineRun(r.ok() ? *r : EngineRun{});
  }();
  return *run;
}

TEST(GradClipTest, TheNormIsTheL2NormOfEveryGradient) {
  // A threshold no norm reaches: the norm is computed, nothing is scaled.
  absl::StatusOr<EngineRun> run = RunEngine(
      "micro_batch=8", 1, {.keep_gradients = true, .max_grad_norm = 1e9});
  ASSERT_TRUE(run.ok()) << run.status();
  double sum = 0;
  for (const auto& [name, g] : run->gradients) {
    for (float v : g.values) sum += static_cast<double>(v) * v;
  }
  ASSERT_GT(sum, 0);
  EXPECT_NEAR(run->grad_norms.back() / std::sqrt(sum), 1.0, 1e-5);

  // ... and training is exactly the unclipped one.
  absl::StatusOr<EngineRun> plain = RunEngine("micro_batch=8", 1);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->grad_norms, std::vector<double>(3, 0.0));
  EXPECT_EQ(run->losses, plain->losses);
  for (const auto& [name, w] : plain->weights) {
    EXPECT_EQ(run->weights.at(name).values, w.values) << name;
  }
}

TEST(GradClipTest, ClippingActsOnEveryStepAndChangesTraining) {
  const EngineRun& clipped = ClippedReference();
  ASSERT_EQ(clipped.grad_norms.size(), 3u);
  for (double norm : clipped.grad_norms) EXPECT_GT(norm, 4 * kMaxNorm);
  absl::StatusOr<EngineRun> plain = RunEngine("micro_batch=8", 1);
  ASSERT_TRUE(plain.ok()) << plain.status();
  // AdamW is nearly invariant to a constant gradient scale; the clip
  // coefficient changes from step to step, and so does the update.
  double largest = 0;
  for (const auto& [name, w] : plain->weights) {
    largest = std::max(
        largest, RelativeNormError(clipped.weights.at(name).values, w.values));
  }
  EXPECT_GT(largest, 1e-4);
}

using Case = LayoutCase;

class ClippedLayoutTest : public ::testing::TestWithParam<Case> {};

TEST_P(ClippedLayoutTest, MatchesSingleRank) {
  const Case& c = GetParam();
  const EngineRun& ref = ClippedReference();
  absl::StatusOr<EngineRun> run =
      RunEngine(c.layout, c.ranks, {.max_grad_norm = kMaxNorm});
  ASSERT_TRUE(run.ok()) << c.layout << ": " << run.status();
  ASSERT_EQ(run->grad_norms.size(), ref.grad_norms.size());
  for (size_t i = 0; i < ref.grad_norms.size(); ++i) {
    EXPECT_NEAR(run->grad_norms[i] / ref.grad_norms[i], 1.0, 1e-5)
        << c.layout << " step " << i << ": " << run->grad_norms[i] << " vs "
        << ref.grad_norms[i];
  }
  ExpectSameTraining(*run, ref, c.layout);
  ExpectSameStep0Gradients(*run, ref, c.layout);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, ClippedLayoutTest,
    ::testing::Values(
        // Replicas (zero 0: the grad group; zero 1-3: the shards), HSDP.
        Case{"zero=0,micro_batch=2", 2}, Case{"zero=1,micro_batch=2", 2},
        Case{"zero=2,micro_batch=1", 2}, Case{"zero=3,micro_batch=1", 4},
        Case{"zero=3,shard_group=2,micro_batch=1", 4},
        // tp-replicated norm weights, with and without sp.
        Case{"tp=2,micro_batch=4", 2}, Case{"tp=4,sp=1,micro_batch=4", 4},
        // Stages, interleaved chunks, context parallelism.
        Case{"pp=2,vpp=2,micro_batch=1", 2}, Case{"cp=2,micro_batch=2", 2},
        // Combinations.
        Case{"tp=2,pp=2,zero=3,micro_batch=1", 8},
        Case{"tp=2,sp=1,cp=2,zero=1,micro_batch=2", 8},
        Case{"tp=2,pp=2,dp=2,zero=0,micro_batch=2", 8}),
    LayoutCaseName);

}  // namespace
}  // namespace tessera::executor::testing
