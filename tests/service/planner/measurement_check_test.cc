// CheckMeasurement: the reports an attacker or a broken agent sent in the
// review (1e308 tokens/s over a 1e-300 s step, negative numbers, 380k metric
// rows for a 4-step trial) are refused naming the quantity; a real
// measurement of the same trial passes. Bounds by hand: llama2-7b at seq
// 4096 is about 4.5e10 model FLOPs per token, so 8 H100s (989 TFLOP/s
// dense bf16, 1979 fp8) allow at most 1.1 x 8 x 1979e12 / 4.5e10 = 3.9e5
// tokens/s.
#include "service/measurement_check.h"

#include <limits>

#include "core/model_flops.h"
#include "gtest/gtest.h"

namespace tessera::service {
namespace {

constexpr int64_t kGlobalBatch = 16, kSeqLen = 4096;

Workload Llama7bOn8H100() {
  return Workload{
      *ModelPreset("llama2-7b"), MakeCluster(*GpuPreset("h100-sxm"), 1, 8),
      TrainingConfig{.global_batch = kGlobalBatch, .seq_len = kSeqLen}};
}

db::Trial TrialOf8Ranks() {
  db::Trial t;
  t.layout =
      *ResolveLayout(*ParseLayout("tp=2,micro_batch=1"), 8, kGlobalBatch);
  t.warmup_steps = 1;
  t.steps = 3;
  return t;
}

// What an honest 8-H100 run of the trial reports: 4.0 s a step of 16 x 4096
// tokens, 16384 tokens/s, 16384 x 4.5e10 / 8 = 9.2e13 model FLOP/s per GPU
// (9% MFU).
TrialResult Honest() {
  TrialResult r;
  r.status = TrialStatus::kOk;
  r.layout = TrialOf8Ranks().layout;
  r.backend = "cuda";
  r.ranks = 8;
  r.global_batch = kGlobalBatch;
  r.seq_len = kSeqLen;
  r.warmup_steps = 1;
  r.steps = 3;
  r.step_time_s = {4.0, 3.9, 4.1};
  r.tokens_per_s = kGlobalBatch * kSeqLen / 4.0;
  r.tokens_per_s_per_gpu = r.tokens_per_s / 8;
  r.mfu = 0.09;
  r.peak_memory_bytes.assign(8, int64_t{60} << 30);
  r.watts_per_gpu = 650;
  r.tokens_per_joule = r.tokens_per_s / (650.0 * 8);
  r.loss = {10.4, 10.3, 10.1, 9.9};
  r.step_times_s = {5.0, 4.0, 3.9, 4.1};
  return r;
}

MeasurementBounds Bounds() {
  return BoundsOf(TrialOf8Ranks(), Llama7bOn8H100());
}

// The refusal's message, "" when accepted.
std::string Refusal(const TrialResult& r,
                    const MeasurementBounds& b = Bounds()) {
  const absl::Status s = CheckMeasurement(r, b);
  if (s.ok()) return "";
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  return std::string(s.message());
}

TEST(MeasurementCheckTest, BoundsComeFromTheTrialAndItsWorkload) {
  const MeasurementBounds b = Bounds();
  EXPECT_EQ(b.world_size, 8);
  EXPECT_EQ(b.max_steps_recorded, 4);
  EXPECT_EQ(b.global_batch, kGlobalBatch);
  ASSERT_TRUE(b.peak_flops_per_gpu.has_value());
  EXPECT_DOUBLE_EQ(*b.peak_flops_per_gpu,  // the fp8 peak, 1978.9 TFLOP/s
                   GpuPreset("h100-sxm")->peak_fp8_tflops * 1e12);
  ASSERT_TRUE(b.model_flops_per_token.has_value());
  EXPECT_NEAR(
      *b.model_flops_per_token,
      ModelFlopsPerStep(*ModelPreset("llama2-7b"), 1, kSeqLen) / kSeqLen, 1);
  EXPECT_NEAR(*b.model_flops_per_token, 4.5e10, 0.3e10);
  EXPECT_EQ(b.memory_bytes_per_rank, GpuPreset("h100-sxm")->memory_bytes);
  EXPECT_DOUBLE_EQ(*b.max_watts_per_gpu, 1.5 * 700);
}

TEST(MeasurementCheckTest, AnHonestMeasurementPasses) {
  EXPECT_EQ(Refusal(Honest()), "");
}

TEST(MeasurementCheckTest, TheReviewsFabricatedBestIsRefused) {
  TrialResult r = Honest();
  r.tokens_per_s = 1e308;
  r.step_time_s = {1e-300, 1e-300, 1e-300};
  EXPECT_NE(Refusal(r).find("tokens_per_s"), std::string::npos) << Refusal(r);
}

TEST(MeasurementCheckTest, ThroughputAboveThePeakIsRefusedEvenWhenConsistent) {
  // 0.05 s a step: 1.3e6 tokens/s, 7e15 FLOP/s per GPU, 3.7x the fp8 peak.
  TrialResult r = Honest();
  r.step_time_s = {0.05, 0.049, 0.051};
  r.tokens_per_s = kGlobalBatch * kSeqLen / 0.05;
  r.tokens_per_joule = r.tokens_per_s / (650.0 * 8);
  EXPECT_NE(Refusal(r).find("peak"), std::string::npos) << Refusal(r);
  // Just under the bound (1.0 x the fp8 peak) is believed.
  const double at_peak =
      *Bounds().peak_flops_per_gpu * 8 / *Bounds().model_flops_per_token;
  r.step_time_s.median = kGlobalBatch * kSeqLen / at_peak;
  r.step_time_s.p10 = r.step_time_s.median;
  r.step_time_s.p90 = r.step_time_s.median;
  r.tokens_per_s = at_peak;
  r.tokens_per_joule = r.tokens_per_s / (650.0 * 8);
  EXPECT_EQ(Refusal(r), "");
}

TEST(MeasurementCheckTest, TokensPerSecondMustFollowFromTheStepTime) {
  TrialResult r = Honest();
  r.tokens_per_s *= 1.5;
  EXPECT_NE(Refusal(r).find("median step"), std::string::npos) << Refusal(r);
}

TEST(MeasurementCheckTest, NegativeAndNonFiniteNumbersAreRefused) {
  TrialResult r = Honest();
  r.tokens_per_s = -r.tokens_per_s;
  EXPECT_NE(Refusal(r).find("tokens_per_s"), std::string::npos);
  r = Honest();
  r.step_time_s = {-4, -4.1, -3.9};
  EXPECT_NE(Refusal(r).find("step_time_s"), std::string::npos);
  r = Honest();
  r.peak_memory_bytes[3] = -1;
  EXPECT_NE(Refusal(r).find("peak_memory_bytes"), std::string::npos);
  r = Honest();
  r.comm_s = std::numeric_limits<double>::infinity();
  EXPECT_NE(Refusal(r).find("comm_s"), std::string::npos);
  // A step's overflowed loss is not a lie: fp16 loss scaling skips it.
  r = Honest();
  r.loss[2] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(Refusal(r), "");
}

TEST(MeasurementCheckTest, MemoryAboveTheDevicesIsRefused) {
  TrialResult r = Honest();
  r.peak_memory_bytes[0] = int64_t{200} << 30;
  EXPECT_NE(Refusal(r).find("peak_memory_bytes"), std::string::npos);
  r = Honest();
  r.peak_memory_bytes.assign(9, 1);
  EXPECT_NE(Refusal(r).find("9 peak memory entries"), std::string::npos);
}

TEST(MeasurementCheckTest, MoreMetricRowsThanStepsAreRefusedWhateverTheStatus) {
  TrialResult r = Honest();
  r.loss.assign(380'000, 5.0);
  EXPECT_NE(Refusal(r).find("380000 losses"), std::string::npos) << Refusal(r);
  TrialResult oom;
  oom.status = TrialStatus::kOom;
  oom.reason = "out of memory";
  oom.layout = TrialOf8Ranks().layout;
  EXPECT_EQ(Refusal(oom), "");
  oom.step_times_s.assign(5, 1.0);
  EXPECT_NE(Refusal(oom), "");
  oom.step_times_s.clear();
  oom.reason.assign(kMaxReportTextBytes + 1, 'x');
  EXPECT_NE(Refusal(oom).find("reason"), std::string::npos);
}

// Issue 28: a report of another layout than the lease was stored ok under
// the lease's layout. Every status is checked against the lease's layout,
// compared resolved (a layout written with or without its derived fields
// is the same layout).
TEST(MeasurementCheckTest, AnotherLayoutThanTheLeasesIsRefusedWhateverTheStatus) {
  TrialResult r = Honest();
  r.layout.micro_batch *= 2;
  r.layout.grad_accum = 0;  // derived again: the same batch
  EXPECT_NE(Refusal(r).find("for a trial leased as"), std::string::npos)
      << Refusal(r);
  TrialResult oom;
  oom.status = TrialStatus::kOom;
  oom.reason = "out of memory";
  oom.layout = TrialOf8Ranks().layout;
  oom.layout.recompute = oom.layout.recompute == Recompute::kFull
                             ? Recompute::kNone
                             : Recompute::kFull;
  EXPECT_NE(Refusal(oom).find("for a trial leased as"), std::string::npos);
  // The lease's own layout with its derived fields left out is the same.
  r = Honest();
  r.layout.grad_accum = 0;
  r.layout.shard_group = 0;
  EXPECT_EQ(Refusal(r), "");
}

TEST(MeasurementCheckTest, ADifferentTrialThanAskedIsRefused) {
  TrialResult r = Honest();
  r.ranks = 16;
  EXPECT_NE(Refusal(r).find("ranks 16"), std::string::npos);
  r = Honest();
  r.global_batch = 32;
  r.tokens_per_s *= 2;
  r.tokens_per_joule = r.tokens_per_s / (650.0 * 8);
  EXPECT_NE(Refusal(r).find("global_batch 32"), std::string::npos);
}

TEST(MeasurementCheckTest, PowerAboveTheBoardLimitIsRefused) {
  TrialResult r = Honest();
  r.watts_per_gpu = 5000;
  r.tokens_per_joule = r.tokens_per_s / (5000.0 * 8);
  EXPECT_NE(Refusal(r).find("watts_per_gpu"), std::string::npos);
  r = Honest();
  r.tokens_per_joule = *r.tokens_per_joule * 3;
  EXPECT_NE(Refusal(r).find("tokens_per_joule"), std::string::npos);
}

// An "agents" study on CPU agents: the peak is the agent's GEMM probe, so a
// trial may beat it (up to 2x); its ranks share the host's memory; CPU
// power is not measured.
TEST(MeasurementCheckTest, CpuAgentsAreJudgedAgainstTheirProbeWithRoom) {
  GpuSpec cpu;
  cpu.name = "agents/cpu/test";
  cpu.architecture = "cpu";
  cpu.peak_dense_tflops = 0.05;
  cpu.memory_bytes = int64_t{12} << 30;
  cpu.hbm_gbs = 15;
  cpu.tdp_w = 10;
  Workload w{*ModelPreset("tiny"), MakeCluster(cpu, 1, 2),
             TrainingConfig{.global_batch = 8, .seq_len = 32}};
  db::Trial t;
  t.layout = *ResolveLayout(*ParseLayout("micro_batch=4"), 2, 8);
  t.warmup_steps = 1;
  t.steps = 2;
  const MeasurementBounds b = BoundsOf(t, w);
  EXPECT_DOUBLE_EQ(b.peak_slack, kCpuPeakSlack);
  EXPECT_EQ(b.memory_bytes_per_rank, int64_t{24} << 30);
  EXPECT_FALSE(b.max_watts_per_gpu.has_value());
  // A trial at `times` the probe's rate.
  auto at = [&](double times) {
    TrialResult r;
    r.status = TrialStatus::kOk;
    r.layout = t.layout;
    r.backend = "cpu";
    r.ranks = 2;
    r.global_batch = 8;
    r.seq_len = 32;
    r.warmup_steps = 1;
    r.steps = 2;
    r.tokens_per_s = times * 0.05e12 * 2 / *b.model_flops_per_token;
    const double step = 8.0 * 32 / r.tokens_per_s;
    r.step_time_s = {step, step, step};
    r.peak_memory_bytes = {int64_t{13} << 30, 1 << 20};  // over a share
    return r;
  };
  EXPECT_EQ(Refusal(at(1.5), b), "");
  EXPECT_EQ(Refusal(at(3.5), b), "");  // a probe taken on busy cores
  EXPECT_NE(Refusal(at(4.5), b).find("peak"), std::string::npos);
}

TEST(MeasurementCheckTest, WithoutTheWorkloadOnlyTheHardwareChecksAreSkipped) {
  const MeasurementBounds b = BoundsOf(TrialOf8Ranks(), std::nullopt);
  EXPECT_FALSE(b.peak_flops_per_gpu.has_value());
  TrialResult r = Honest();
  r.step_time_s = {0.05, 0.049, 0.051};
  r.tokens_per_s = kGlobalBatch * kSeqLen / 0.05;
  r.tokens_per_joule = r.tokens_per_s / (650.0 * 8);
  EXPECT_EQ(Refusal(r, b), "");  // above the peak, but no peak is known
  r.tokens_per_s = 1e308;
  EXPECT_NE(Refusal(r, b), "");  // inconsistent with its step time
  r = Honest();
  r.loss.assign(100, 1.0);
  EXPECT_NE(Refusal(r, b), "");
}

}  // namespace
}  // namespace tessera::service
