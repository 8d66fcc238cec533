#include "executor/tessera_trial/trial_runner.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <thread>

#include "gtest/gtest.h"

namespace tessera::executor {
namespace {

TrialConfig Tiny(const char* layout, int64_t ranks) {
  TrialConfig c;
  c.model = *ModelPreset("tiny");
  c.layout = *ParseLayout(layout);
  c.ranks = ranks;
  c.global_batch = 8;
  c.seq_len = 32;
  c.warmup_steps = 1;
  c.steps = 3;
  return c;
}

TEST(TrialRunnerTest, OkTrialMeasuresEverything) {
  const TrialResult r = RunTrial(Tiny("tp=2,pp=2,zero=1,micro_batch=1", 8));
  ASSERT_EQ(r.status, TrialStatus::kOk) << r.reason;
  EXPECT_EQ(r.reason, "");
  EXPECT_EQ(r.layout.dp, 2);
  EXPECT_EQ(r.layout.grad_accum, 4);
  EXPECT_EQ(r.steps, 3);
  ASSERT_EQ(r.loss.size(), 4u);  // warm-up included
  ASSERT_EQ(r.step_times_s.size(), 4u);
  for (double l : r.loss) EXPECT_TRUE(std::isfinite(l));
  EXPECT_LT(r.loss.back(), r.loss.front());
  EXPECT_GT(r.step_time_s.median, 0);
  EXPECT_LE(r.step_time_s.p10, r.step_time_s.median);
  EXPECT_LE(r.step_time_s.median, r.step_time_s.p90);
  EXPECT_DOUBLE_EQ(r.tokens_per_s, 8 * 32 / r.step_time_s.median);
  EXPECT_DOUBLE_EQ(r.tokens_per_s_per_gpu, r.tokens_per_s / 8);
  EXPECT_GT(r.tflops_per_gpu, 0);
  EXPECT_GT(r.peak_tflops, 0);
  EXPECT_NEAR(r.mfu, r.tflops_per_gpu / r.peak_tflops, 1e-12);
  ASSERT_EQ(r.peak_memory_bytes.size(), 8u);
  for (int64_t b : r.peak_memory_bytes) EXPECT_GT(b, 0);
  EXPECT_GT(r.comm_s, 0);
  EXPECT_NEAR(r.compute_s + r.comm_s, r.step_time_s.median,
              0.5 * r.step_time_s.median);
  // No power meter on the CPU backend: never a made-up number.
  EXPECT_FALSE(r.watts_per_gpu.has_value());
  EXPECT_FALSE(r.tokens_per_joule.has_value());
}

TEST(TrialRunnerTest, MemoryLimitIsOom) {
  TrialConfig c = Tiny("tp=2", 2);
  c.memory_limit_bytes = 1 << 20;  // 1 MiB: not even the weights fit
  const TrialResult r = RunTrial(c);
  EXPECT_EQ(r.status, TrialStatus::kOom) << r.reason;
  EXPECT_NE(r.reason.find("limit"), std::string::npos) << r.reason;
}

TEST(TrialRunnerTest, DivergingLossIsNan) {
  TrialConfig c = Tiny("micro_batch=8", 1);
  c.adamw.lr = 1e30f;
  c.steps = 5;
  const TrialResult r = RunTrial(c);
  EXPECT_EQ(r.status, TrialStatus::kNan) << r.reason;
  EXPECT_NE(r.reason.find("loss is"), std::string::npos) << r.reason;
}

TEST(TrialRunnerTest, TimeLimitIsTimeout) {
  TrialConfig c = Tiny("micro_batch=1", 1);
  c.time_limit_s = 1e-6;
  const TrialResult r = RunTrial(c);
  EXPECT_EQ(r.status, TrialStatus::kTimeout) << r.reason;
}

TEST(TrialRunnerTest, LayoutsThatDoNotFitAreInvalid) {
  TrialResult r = RunTrial(Tiny("tp=3", 4));
  EXPECT_EQ(r.status, TrialStatus::kInvalid);
  EXPECT_NE(r.reason.find("layout.tp"), std::string::npos) << r.reason;
  r = RunTrial(Tiny("tp=8", 8));  // 4 kv heads
  EXPECT_EQ(r.status, TrialStatus::kInvalid);
  EXPECT_NE(r.reason.find("kv_heads"), std::string::npos) << r.reason;
  r = RunTrial(Tiny("micro_batch=3", 1));  // 8 sequences
  EXPECT_EQ(r.status, TrialStatus::kInvalid);
  EXPECT_NE(r.reason.find("not reachable"), std::string::npos) << r.reason;
  TrialConfig gpt = Tiny("micro_batch=8", 1);
  gpt.model.mlp = MlpKind::kGelu;
  r = RunTrial(gpt);
  EXPECT_EQ(r.status, TrialStatus::kInvalid);
  EXPECT_NE(r.reason.find("model.mlp"), std::string::npos) << r.reason;
  TrialConfig bad = Tiny("micro_batch=8", 1);
  bad.backend = "tpu";
  EXPECT_EQ(RunTrial(bad).status, TrialStatus::kInvalid);
  bad = Tiny("micro_batch=8", 1);
  bad.ranks = 0;
  r = RunTrial(bad);
  EXPECT_EQ(r.status, TrialStatus::kInvalid);
  EXPECT_NE(r.reason.find("trial.ranks"), std::string::npos) << r.reason;
  bad = Tiny("micro_batch=8", 1);
  bad.data_path = "/nonexistent/tokens.bin";
  r = RunTrial(bad);
  EXPECT_EQ(r.status, TrialStatus::kInvalid);
  EXPECT_NE(r.reason.find("/nonexistent/tokens.bin"), std::string::npos);
}

// One process per rank (here: one thread per "process", each with its own
// TCP endpoint) runs the same math as ranks-as-threads: the losses agree
// bitwise, and every process reports the gathered view of all ranks.
TEST(TrialRunnerTest, ProcessPerRankMatchesThreads) {
  const TrialConfig threads = Tiny("tp=2,pp=2,micro_batch=2", 4);
  const TrialResult want = RunTrial(threads);
  ASSERT_EQ(want.status, TrialStatus::kOk) << want.reason;

  const std::string rendezvous =
      ::testing::TempDir() + "/trial_rdv_" + std::to_string(getpid());
  std::filesystem::remove(rendezvous);
  std::vector<TrialResult> got(4);
  std::vector<std::thread> procs;
  for (int r = 0; r < 4; ++r) {
    procs.emplace_back([&, r] {
      TrialConfig c = threads;
      c.process_rank = r;
      c.rendezvous_file = rendezvous;
      c.time_limit_s = 120;
      got[r] = RunTrial(c);
    });
  }
  for (std::thread& t : procs) t.join();
  for (int r = 0; r < 4; ++r) {
    ASSERT_EQ(got[r].status, TrialStatus::kOk) << r << ": " << got[r].reason;
    EXPECT_EQ(got[r].loss, want.loss) << r;
    EXPECT_EQ(got[r].peak_memory_bytes.size(), 4u);
    EXPECT_EQ(got[r].step_times_s, got[0].step_times_s);
    EXPECT_EQ(got[r].peak_tflops, got[0].peak_tflops);
  }
}

TEST(TrialRunnerTest, ProcessPerRankNeedsARendezvous) {
  TrialConfig c = Tiny("micro_batch=8", 2);
  c.process_rank = 0;
  const TrialResult r = RunTrial(c);
  EXPECT_EQ(r.status, TrialStatus::kInvalid);
  EXPECT_NE(r.reason.find("rendezvous"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace tessera::executor
