// FitCalibration against synthetic ground truth: trials "measured" by
// PredictLayout under a known calibration that differs from the prior, with
// and without noise, on H100 clusters and on a CPU-like "GPU".
#include "costmodel/fit/calibration_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "costmodel/memory/memory_model.h"
#include "costmodel/prediction.h"
#include "costmodel/resolved_workload.h"

namespace tessera::costmodel {
namespace {

const std::set<std::string> kCompute = {
    "gemm_peak_efficiency",       "gemm_traffic_factor",
    "attention_efficiency",       "attention_seq_half_tokens",
    "elementwise_traffic_factor", "optimizer_bytes_per_param"};

Workload MakeWorkload(const char* model, const GpuSpec& gpu, int64_t nodes,
                      int64_t gpus_per_node, int64_t global_batch,
                      int64_t seq_len) {
  Workload w{*ModelPreset(model), MakeCluster(gpu, nodes, gpus_per_node),
             TrainingConfig{.global_batch = global_batch, .seq_len = seq_len}};
  // The samples are trials that ran: the device's memory, no margin.
  w.cluster.memory_headroom_fraction = 0;
  return w;
}

Workload H100(const char* model, int64_t nodes, int64_t global_batch,
              int64_t seq_len) {
  return MakeWorkload(model, *GpuPreset("h100-sxm"), nodes, 8, global_batch,
                      seq_len);
}

// The calibration the synthetic trials run under: four coefficients away from
// their defaults, the rest at the defaults.
Calibration Truth() {
  Calibration c;
  c.gemm_peak_efficiency = 0.55;
  c.inter_node_bw_efficiency = 0.5;
  c.fsdp_overlap_efficiency = 0.7;
  c.power_compute_activity = 0.6;
  return c;
}

struct Measured {
  bool breakdown = false;  // compute, comm and exposed comm
  bool watts = false;
  bool memory = false;  // peak memory per GPU
};

// A trial of `layout` on `w` whose measurements are the prediction under
// `truth`.
CalibrationSample Trial(const Workload& w, const char* layout,
                        const Calibration& truth, Measured measured) {
  CalibrationSample s;
  s.workload = w;
  absl::StatusOr<Layout> l = ParseLayout(layout);
  EXPECT_TRUE(l.ok()) << l.status();
  s.layout = *l;
  const LayoutEvaluation e = PredictLayout(w, s.layout, truth);
  EXPECT_TRUE(e.feasible) << layout << ": " << e.reason;
  s.step_time_s = e.prediction.step_time_s;
  if (measured.breakdown) {
    s.compute_s = e.prediction.compute_s;
    s.comm_s = e.prediction.comm_s;
    s.exposed_comm_s = e.prediction.exposed_comm_s;
  }
  if (measured.watts) s.watts_per_gpu = e.prediction.watts_per_gpu;
  if (measured.memory) s.peak_memory_bytes = e.prediction.memory.total_bytes;
  return s;
}

// A realistic first round of trials: llama3-8b on one and two H100 nodes
// (three sequence lengths) and llama2-70b on eight nodes, over DDP/ZeRO,
// FSDP, tp (with sp), pp (with vpp), cp and recomputation; every other trial
// also measures its compute / comm / exposed comm split.
std::vector<CalibrationSample> TrialRound(const Calibration& truth,
                                          bool watts) {
  const Workload small = H100("llama3-8b", 2, 32, 4096);
  const Workload small_short = H100("llama3-8b", 2, 64, 2048);
  const Workload node = H100("llama3-8b", 1, 16, 8192);
  const Workload mid = H100("llama2-70b", 8, 128, 4096);
  struct Entry {
    const Workload* workload;
    const char* layout;
  };
  const Entry entries[] = {
      {&small, "zero=2,recompute=selective"},
      {&small, "tp=2,sp=1,zero=1,micro_batch=2,recompute=full"},
      {&small, "tp=8,pp=2"},
      {&small, "zero=3"},
      {&small_short, "tp=4,zero=3,micro_batch=2"},
      {&small_short, "pp=4,zero=1,recompute=selective"},
      {&small, "tp=2,cp=2,zero=1"},
      {&node, "tp=8"},
      {&node, "tp=2,zero=3,recompute=selective"},
      {&mid, "tp=8,pp=4,vpp=5,zero=1,recompute=selective"},
      {&mid, "tp=8,pp=2,zero=1,recompute=full"},
      {&mid, "tp=4,zero=3,recompute=full"},
      {&mid, "zero=3,recompute=full"},
  };
  std::vector<CalibrationSample> samples;
  for (size_t i = 0; i < std::size(entries); ++i) {
    samples.push_back(Trial(*entries[i].workload, entries[i].layout, truth,
                            {.breakdown = i % 2 == 0, .watts = watts}));
  }
  return samples;
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

double Value(const Calibration& c, const std::string& name) {
  return *c.Get(name);
}

// Every coefficient that was not fitted has exactly the prior's value.
void ExpectUnfittedAtPrior(const CalibrationFit& fit,
                           const Calibration& prior) {
  for (const CoefficientInfo& info : Calibration::Infos()) {
    if (Contains(fit.fitted, info.name)) continue;
    EXPECT_EQ(Value(fit.calibration, info.name), Value(prior, info.name))
        << info.name;
  }
}

CalibrationFit Fit(const std::vector<CalibrationSample>& samples,
                   const Calibration& prior = Calibration{},
                   const CalibrationFitOptions& options = {}) {
  absl::StatusOr<CalibrationFit> fit = FitCalibration(samples, prior, options);
  EXPECT_TRUE(fit.ok()) << fit.status();
  return fit.ok() ? *std::move(fit) : CalibrationFit{};
}

// The memory tests' truth: a larger fixed overhead, more fragmentation and
// more saved activations than the defaults, and 8-byte logits.
Calibration MemoryTruth() {
  Calibration truth;
  truth.memory_fixed_overhead_gib = 3;
  truth.memory_fragmentation = 0.15;
  truth.saved_activation_factor = 1.3;
  truth.logits_bytes_per_element = 8;
  return truth;
}

// Six runs of llama3-8b on one H100 node, each holding a different mix of
// states, activations and logits.
std::vector<std::pair<Workload, const char*>> MemoryRuns() {
  const Workload w = H100("llama3-8b", 1, 16, 4096);
  const Workload shorter = H100("llama3-8b", 1, 64, 1024);
  return {{w, "zero=3,micro_batch=1,recompute=full"},
          {w, "zero=3,micro_batch=1,recompute=selective"},
          {w, "tp=2,sp=1,zero=1,micro_batch=1"},
          {w, "tp=8,zero=0,micro_batch=2"},
          {shorter, "zero=3,micro_batch=4"},
          {shorter, "tp=4,sp=1,pp=2,zero=1,micro_batch=4"}};
}

TEST(CalibrationFitTest, PeakMemoryRefitsTheMemoryCoefficients) {
  // Trials that measure their peak memory (CUDA's allocator) identify the
  // memory coefficients, which no time depends on.
  const Calibration truth = MemoryTruth();
  std::vector<CalibrationSample> samples;
  for (const auto& [workload, layout] : MemoryRuns()) {
    samples.push_back(Trial(workload, layout, truth, {.memory = true}));
  }
  const CalibrationFit fit = Fit(samples);
  for (const char* name :
       {"memory_fixed_overhead_gib", "memory_fragmentation",
        "saved_activation_factor", "logits_bytes_per_element"}) {
    EXPECT_TRUE(Contains(fit.fitted, name)) << name;
  }
  for (size_t i = 0; i < fit.residuals.size(); ++i) {
    const CalibrationSampleResidual& r = fit.residuals[i];
    ASSERT_TRUE(r.measured_peak_memory_bytes.has_value());
    // The defaults were 5-50% off; the fit is within 3% (the prior on four
    // coefficients pulls a little).
    EXPECT_NEAR(r.fitted_peak_memory_bytes / *r.measured_peak_memory_bytes, 1,
                0.03)
        << "sample " << i;
    EXPECT_GT(
        std::abs(r.prior_peak_memory_bytes / *r.measured_peak_memory_bytes - 1),
        0.05)
        << "sample " << i;
  }
  EXPECT_NEAR(fit.calibration.saved_activation_factor, 1.3, 0.1);
  // Without measured memory they stay at the prior.
  std::vector<CalibrationSample> no_memory = samples;
  for (CalibrationSample& s : no_memory) s.peak_memory_bytes.reset();
  const CalibrationFit times_only = Fit(no_memory);
  EXPECT_FALSE(Contains(times_only.fitted, "memory_fragmentation"));
  EXPECT_EQ(times_only.calibration.memory_fragmentation,
            Calibration{}.memory_fragmentation);
}

TEST(CalibrationFitTest, PeakAllocatedMovesWhatTensorsHoldNotTheOverhead) {
  // Trials that report the bytes handed to tensors
  // (torch.cuda.max_memory_allocated), not what the allocator reserved:
  // compared with the predicted peak less its overhead, they identify the
  // saved activations and the logits and leave the fixed overhead and the
  // fragmentation at the prior, however far those are in the truth.
  const Calibration truth = MemoryTruth();
  std::vector<CalibrationSample> samples;
  for (const auto& [workload, layout] : MemoryRuns()) {
    CalibrationSample s = Trial(workload, layout, truth, {});
    const LayoutEvaluation e = PredictLayout(workload, s.layout, truth);
    s.peak_allocated_bytes =
        e.prediction.memory.total_bytes - e.prediction.memory.overhead_bytes;
    samples.push_back(s);
  }
  const CalibrationFit fit = Fit(samples);
  EXPECT_TRUE(Contains(fit.fitted, "saved_activation_factor"));
  EXPECT_TRUE(Contains(fit.fitted, "logits_bytes_per_element"));
  EXPECT_FALSE(Contains(fit.fitted, "memory_fixed_overhead_gib"));
  EXPECT_FALSE(Contains(fit.fitted, "memory_fragmentation"));
  EXPECT_NEAR(fit.calibration.saved_activation_factor, 1.3, 0.05);
  EXPECT_EQ(fit.calibration.memory_fragmentation,
            Calibration{}.memory_fragmentation);
  // Read as reserved memory, the same bytes would be explained by shrinking
  // the overhead instead: the two measurements are not interchangeable.
  std::vector<CalibrationSample> as_reserved = samples;
  for (CalibrationSample& s : as_reserved) {
    s.peak_memory_bytes = s.peak_allocated_bytes;
    s.peak_allocated_bytes.reset();
  }
  const CalibrationFit reserved = Fit(as_reserved);
  EXPECT_TRUE(Contains(reserved.fitted, "memory_fragmentation"));
  EXPECT_LT(reserved.calibration.memory_fragmentation,
            Calibration{}.memory_fragmentation);
}

TEST(CalibrationFitTest, OneStagesMemoryIsComparedWithThatStage) {
  // A source that reports one rank's memory (nanotron's rank 0) says what
  // that stage holds. Here the last of 4 stages (one micro-batch in flight
  // and the logits), measured as allocated under saved activations 1.3x the
  // default: the fit recovers 1.3 against that stage. Taken as the most
  // loaded rank's (stage 0: four micro-batches in flight), the same bytes
  // would say the activations are smaller than the default.
  Calibration truth;
  truth.saved_activation_factor = 1.3;
  const Workload w = H100("llama3-8b", 2, 64, 4096);
  std::vector<CalibrationSample> samples;
  for (const char* layout :
       {"pp=4,zero=1,micro_batch=1", "tp=2,sp=1,pp=4,zero=1,micro_batch=2",
        "tp=4,sp=1,pp=4,zero=1,micro_batch=4"}) {
    CalibrationSample s = Trial(w, layout, truth, {});
    const ResolvedWorkload r = *ResolveWorkload(w);
    const Layout resolved = PredictLayout(r, s.layout, truth).layout;
    const MemoryBreakdown last = StageMemory(
        w.model, resolved, w.training, r.stack, truth, /*stage=*/3);
    s.peak_allocated_bytes = last.total_bytes - last.overhead_bytes;
    s.memory_stage = 3;
    samples.push_back(s);
  }
  CalibrationFitOptions options;
  options.fixed.push_back("logits_bytes_per_element");
  const CalibrationFit fit = Fit(samples, Calibration{}, options);
  EXPECT_NEAR(fit.calibration.saved_activation_factor, 1.3, 0.02);
  for (CalibrationSample& s : samples) s.memory_stage.reset();
  const CalibrationFit as_peak = Fit(samples, Calibration{}, options);
  EXPECT_LT(as_peak.calibration.saved_activation_factor, 1.0);
}

TEST(CalibrationFitTest, ATrialThatRanFitsInMemoryAfterTheFit) {
  // A trial that ran fitted in its GPU's memory, measured or not: where the
  // prior says it would not (activations 1.0x where the truth keeps 0.5x),
  // the fit moves the memory coefficients until it does, from step times
  // alone. Trials the prior already fits leave them at the prior.
  Calibration truth;
  truth.saved_activation_factor = 0.5;
  const Workload w = H100("llama3-8b", 1, 64, 8192);
  const double gpu_bytes = static_cast<double>(w.cluster.gpu.memory_bytes);
  std::vector<CalibrationSample> samples = {
      Trial(w, "tp=4,sp=1,zero=1,micro_batch=4", truth, {}),
      Trial(w, "tp=8,sp=1,zero=1,micro_batch=8", truth, {}),
      Trial(w, "tp=4,sp=1,zero=1,micro_batch=8", truth, {})};
  auto prior_ratio = [&](const CalibrationSample& s) {
    return PredictLayout(w, s.layout, Calibration{})
               .prediction.memory.total_bytes /
           gpu_bytes;
  };
  ASSERT_LT(prior_ratio(samples[0]), 1);
  ASSERT_LT(prior_ratio(samples[1]), 1);
  ASSERT_GT(prior_ratio(samples[2]), 1.3);  // 111 GiB at the prior
  const CalibrationFit fit = Fit(samples);
  EXPECT_TRUE(Contains(fit.fitted, "saved_activation_factor"));
  EXPECT_LT(fit.calibration.saved_activation_factor, 0.8);
  // Pulled to the GPU's memory within a measurement's precision (a soft
  // bound: the prior still pulls the other way).
  EXPECT_LT(fit.residuals[2].fitted_peak_memory_bytes / gpu_bytes, 1.01);
  for (const std::string& warning : fit.warnings) {
    EXPECT_FALSE(absl::StrContains(warning, "ran, but")) << warning;
  }
  // With the memory coefficients held, nothing can bring it down: the fit
  // says which sample ran but still does not fit, and by how much.
  CalibrationFitOptions held;
  held.fixed = {"saved_activation_factor", "logits_bytes_per_element",
                "memory_fixed_overhead_gib", "memory_fragmentation"};
  const CalibrationFit stuck = Fit(samples, Calibration{}, held);
  ASSERT_EQ(stuck.warnings.size(), 1u);
  EXPECT_TRUE(absl::StrContains(stuck.warnings[0], "samples[2] ran, but"))
      << stuck.warnings[0];
  EXPECT_TRUE(absl::StrContains(stuck.warnings[0], "tp=4")) << stuck.warnings[0];
  // Without the trial the prior calls too big, nothing says memory is
  // smaller: the memory coefficients stay where they were.
  samples.pop_back();
  const CalibrationFit fits_already = Fit(samples);
  EXPECT_FALSE(Contains(fits_already.fitted, "saved_activation_factor"));
  EXPECT_EQ(fits_already.calibration.saved_activation_factor,
            Calibration{}.saved_activation_factor);
}

TEST(CalibrationFitTest, RecoversThePerturbedCoefficients) {
  const Calibration truth = Truth();
  const CalibrationFit fit = Fit(TrialRound(truth, /*watts=*/true));
  EXPECT_EQ(fit.samples, 13);
  // The prior is 20% off on average; the fit matches the trials.
  EXPECT_GT(fit.prior_step_time_mape, 0.15);
  EXPECT_LT(fit.fitted_step_time_mape, 0.005);
  EXPECT_LT(fit.fitted_objective, 0.01 * fit.prior_objective);
  const Calibration& c = fit.calibration;
  EXPECT_NEAR(c.gemm_peak_efficiency, 0.55, 0.02 * 0.55);
  EXPECT_NEAR(c.inter_node_bw_efficiency, 0.5, 0.02 * 0.5);
  EXPECT_NEAR(c.fsdp_overlap_efficiency, 0.7, 0.03);
  EXPECT_NEAR(c.power_compute_activity, 0.6, 0.01);
  // The coefficients the truth shares with the prior stay close to it.
  for (const std::string& name : fit.fitted) {
    const double t = Value(truth, name);
    EXPECT_NEAR(Value(c, name), t, std::max(0.05 * t, 0.01)) << name;
  }
  // Identified: compute, all three link figures, tp/dp overlap, FSDP, power.
  for (const char* name :
       {"gemm_peak_efficiency", "attention_efficiency",
        "intra_node_bw_efficiency", "inter_node_bw_efficiency",
        "ring_latency_factor", "tp_overlap_efficiency", "dp_overlap_efficiency",
        "fsdp_bandwidth_efficiency", "fsdp_overlap_efficiency",
        "power_compute_activity", "power_comm_activity"}) {
    EXPECT_TRUE(Contains(fit.fitted, name)) << name;
  }
  // Nothing measured depends on memory.
  EXPECT_FALSE(Contains(fit.fitted, "memory_fixed_overhead_gib"));
  EXPECT_FALSE(Contains(fit.fitted, "memory_fragmentation"));
  ExpectUnfittedAtPrior(fit, Calibration{});
  EXPECT_TRUE(fit.warnings.empty()) << fit.warnings.front();
}

TEST(CalibrationFitTest, NvmlWattsFitThePowerOfEachPhaseWithSpreads) {
  // Power per phase (costmodel/power/power.h): trials that measured watts
  // identify what compute, exposed communication and pipeline waits each
  // draw, once the layouts mix the three. The truth's waiting GPUs draw far
  // less than computing ones (as production telemetry of large jobs shows);
  // the step times are the prior's, so only power moves.
  Calibration truth;
  truth.power_compute_activity = 0.9;
  truth.power_comm_activity = 0.35;
  truth.power_pipeline_wait_activity = 0.15;
  const Workload small = H100("llama3-8b", 2, 32, 4096);
  const Workload mid = H100("llama2-70b", 8, 128, 4096);
  std::vector<CalibrationSample> samples;
  for (const auto& [w, layout] : std::vector<std::pair<const Workload*, const char*>>{
           {&small, "zero=2,recompute=selective"},
           {&small, "tp=8,pp=2"},
           {&small, "pp=8,micro_batch=4"},
           {&small, "pp=4,zero=1,micro_batch=8"},
           {&small, "zero=3"},
           {&mid, "tp=8,pp=4,zero=1,recompute=selective"},
           {&mid, "tp=8,pp=8,zero=1,micro_batch=8,recompute=full"},
           {&mid, "zero=3,recompute=full"}}) {
    samples.push_back(Trial(*w, layout, truth, {.watts = true}));
  }
  const CalibrationFit fit = Fit(samples);
  const Calibration prior;
  for (const char* name : {"power_compute_activity", "power_comm_activity",
                           "power_pipeline_wait_activity"}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(Contains(fit.fitted, name));
    // Most of the way from the prior to the truth: the fit is a posterior
    // mode, which the prior pulls back by a few hundredths with 8 trials
    // (communication: 0.387 for a truth of 0.35 from a prior of 0.75).
    const double distance =
        std::abs(Value(prior, name) - Value(truth, name));
    EXPECT_NEAR(Value(fit.calibration, name), Value(truth, name),
                std::max(0.03, 0.25 * distance));
    // Its interval: a posterior spread, tighter than the prior's.
    ASSERT_TRUE(fit.posterior_log_sd.count(name));
    EXPECT_LT(fit.posterior_log_sd.at(name), fit.prior_log_sd);
  }
}

TEST(CalibrationFitTest, ResidualsAreThePredictionsOfPriorAndFit) {
  const std::vector<CalibrationSample> samples =
      TrialRound(Truth(), /*watts=*/true);
  const CalibrationFit fit = Fit(samples);
  ASSERT_EQ(fit.residuals.size(), samples.size());
  double prior_sum = 0, fitted_sum = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const CalibrationSampleResidual& r = fit.residuals[i];
    const Prediction before =
        PredictLayout(samples[i].workload, samples[i].layout, Calibration{})
            .prediction;
    const Prediction after =
        PredictLayout(samples[i].workload, samples[i].layout, fit.calibration)
            .prediction;
    EXPECT_EQ(r.measured_step_time_s, samples[i].step_time_s);
    EXPECT_EQ(r.prior_step_time_s, before.step_time_s);
    EXPECT_EQ(r.fitted_step_time_s, after.step_time_s);
    EXPECT_EQ(r.measured_watts_per_gpu, samples[i].watts_per_gpu);
    EXPECT_EQ(r.fitted_watts_per_gpu, after.watts_per_gpu);
    EXPECT_DOUBLE_EQ(r.step_time_error(),
                     after.step_time_s / samples[i].step_time_s - 1);
    prior_sum += std::abs(before.step_time_s / samples[i].step_time_s - 1);
    fitted_sum += std::abs(r.step_time_error());
  }
  EXPECT_DOUBLE_EQ(fit.prior_step_time_mape, prior_sum / 13);
  EXPECT_DOUBLE_EQ(fit.fitted_step_time_mape, fitted_sum / 13);
}

TEST(CalibrationFitTest, IsDeterministic) {
  const std::vector<CalibrationSample> samples =
      TrialRound(Truth(), /*watts=*/true);
  const CalibrationFit a = Fit(samples);
  const CalibrationFit b = Fit(samples);
  for (const CoefficientInfo& info : Calibration::Infos()) {
    EXPECT_EQ(Value(a.calibration, info.name), Value(b.calibration, info.name))
        << info.name;
  }
  EXPECT_EQ(a.fitted, b.fitted);
  EXPECT_EQ(a.fitted_objective, b.fitted_objective);
  EXPECT_EQ(a.iterations, b.iterations);
}

TEST(CalibrationFitTest, PowerStaysAtThePriorWithoutWatts) {
  const Calibration truth = Truth();
  const CalibrationFit fit = Fit(TrialRound(truth, /*watts=*/false));
  EXPECT_FALSE(Contains(fit.fitted, "power_compute_activity"));
  EXPECT_FALSE(Contains(fit.fitted, "power_comm_activity"));
  EXPECT_EQ(fit.calibration.power_compute_activity,
            Calibration{}.power_compute_activity);
  EXPECT_EQ(fit.calibration.power_comm_activity,
            Calibration{}.power_comm_activity);
  // Time coefficients are found as well as with watts.
  EXPECT_LT(fit.fitted_step_time_mape, 0.005);
  EXPECT_NEAR(fit.calibration.gemm_peak_efficiency, 0.55, 0.02 * 0.55);
  EXPECT_NEAR(fit.calibration.inter_node_bw_efficiency, 0.5, 0.02 * 0.5);
  ExpectUnfittedAtPrior(fit, Calibration{});
}

TEST(CalibrationFitTest, OnlyWhatTheLayoutsExerciseIsFitted) {
  // DDP and ZeRO-1/2 inside one node: no tp, no FSDP, no InfiniBand.
  const Calibration truth = Truth();
  const Workload w = H100("small", 1, 64, 2048);
  const std::vector<CalibrationSample> samples = {
      Trial(w, "zero=0,micro_batch=8", truth, {}),
      Trial(w, "zero=1,micro_batch=4", truth, {.breakdown = true}),
      Trial(w, "zero=2,micro_batch=2", truth, {}),
  };
  const CalibrationFit fit = Fit(samples);
  std::set<std::string> expected = kCompute;
  expected.insert({"intra_node_bw_efficiency", "ring_latency_factor",
                   "dp_overlap_efficiency"});
  EXPECT_EQ(std::set<std::string>(fit.fitted.begin(), fit.fitted.end()),
            expected);
  ExpectUnfittedAtPrior(fit, Calibration{});
  EXPECT_LT(fit.fitted_step_time_mape, 0.01);
}

TEST(CalibrationFitTest, ASingleRankSampleMovesOnlyCompute) {
  Calibration truth;
  truth.gemm_peak_efficiency = 0.5;
  const Workload w =
      MakeWorkload("small", *GpuPreset("h100-sxm"), 1, 1, 8, 2048);
  const CalibrationSample sample =
      Trial(w, "micro_batch=2", truth, {.watts = true});
  CalibrationSample no_watts = sample;
  no_watts.watts_per_gpu.reset();

  const CalibrationFit fit = Fit({no_watts});
  EXPECT_EQ(std::set<std::string>(fit.fitted.begin(), fit.fitted.end()),
            kCompute);
  ExpectUnfittedAtPrior(fit, Calibration{});
  // One measurement: matched (within 0.2%: the prior on six free compute
  // coefficients pulls a little), by slowing compute (every compute
  // coefficient moves the slow way, gemm_peak_efficiency the most).
  EXPECT_GT(fit.prior_step_time_mape, 0.15);
  EXPECT_LT(fit.fitted_step_time_mape, 2e-3);
  const Calibration prior;
  EXPECT_LT(fit.calibration.gemm_peak_efficiency, prior.gemm_peak_efficiency);
  EXPECT_LT(fit.calibration.attention_efficiency, prior.attention_efficiency);
  EXPECT_GT(fit.calibration.elementwise_traffic_factor,
            prior.elementwise_traffic_factor);
  EXPECT_GT(fit.calibration.gemm_traffic_factor, prior.gemm_traffic_factor);

  // With watts, the compute power share is identified too; the comm share is
  // not (one rank never communicates).
  const CalibrationFit with_watts = Fit({sample});
  std::set<std::string> expected = kCompute;
  expected.insert("power_compute_activity");
  EXPECT_EQ(
      std::set<std::string>(with_watts.fitted.begin(), with_watts.fitted.end()),
      expected);
  EXPECT_EQ(with_watts.calibration.power_comm_activity,
            Calibration{}.power_comm_activity);
}

TEST(CalibrationFitTest, FixedCoefficientsKeepThePrior) {
  CalibrationFitOptions options;
  options.fixed = {"gemm_peak_efficiency", "inter_node_bw_efficiency"};
  Calibration prior;
  prior.gemm_peak_efficiency = 0.7;
  const CalibrationFit fit =
      Fit(TrialRound(Truth(), /*watts=*/false), prior, options);
  EXPECT_FALSE(Contains(fit.fitted, "gemm_peak_efficiency"));
  EXPECT_FALSE(Contains(fit.fitted, "inter_node_bw_efficiency"));
  EXPECT_EQ(fit.calibration.gemm_peak_efficiency, 0.7);
  EXPECT_EQ(fit.calibration.inter_node_bw_efficiency, 0.8);
  ExpectUnfittedAtPrior(fit, prior);
}

TEST(CalibrationFitTest, LeavesTheFlatSideOfAnOverlapKink) {
  // The prior (say, a fit on one node) hides all FSDP traffic: exposed =
  // max(0, comm - overlap * compute) is 0 and flat in both FSDP coefficients
  // there. The truth, on 2 to 8 nodes, exposes it.
  // Hidden traffic costs nothing here (no compute slowdown beside it), so
  // that the prior is flat in the FSDP coefficients.
  Calibration prior;
  prior.fsdp_overlap_efficiency = 1.0;
  prior.fsdp_bandwidth_efficiency = 0.5;
  prior.overlap_compute_slowdown = 0;
  Calibration truth;  // DeepSpeed-2021-like FSDP
  truth.fsdp_overlap_efficiency = 0.4;
  truth.fsdp_bandwidth_efficiency = 0.19;
  truth.overlap_compute_slowdown = 0;
  const Workload two = H100("llama3-8b", 2, 64, 4096);
  const Workload four = H100("llama2-70b", 4, 128, 4096);
  const Workload eight = H100("llama2-70b", 8, 128, 4096);
  const std::vector<CalibrationSample> samples = {
      Trial(two, "zero=3,micro_batch=4,recompute=full", truth,
            {.breakdown = true}),
      Trial(two, "zero=3,micro_batch=2,recompute=selective", truth, {}),
      Trial(two, "tp=2,zero=3,micro_batch=4,recompute=selective", truth,
            {.breakdown = true}),
      Trial(four, "zero=3,micro_batch=4,recompute=full", truth, {}),
      Trial(eight, "zero=3,micro_batch=2,recompute=full", truth,
            {.breakdown = true}),
      Trial(eight, "tp=2,zero=3,micro_batch=4,recompute=full", truth, {}),
  };
  for (const CalibrationSample& s : samples) {
    // Under the prior only the (blocking) tp traffic is exposed, and of the
    // FSDP traffic the first unit's collectives of each pass (under 4% of
    // it: at least 64 units of which 3 passes expose one).
    const Prediction p = PredictLayout(s.workload, s.layout, prior).prediction;
    EXPECT_GE(p.exposed_comm_s, p.tp_comm_s) << FormatLayout(s.layout);
    EXPECT_LT(p.exposed_comm_s - p.tp_comm_s, 0.04 * p.dp_comm_s)
        << FormatLayout(s.layout);
  }
  const CalibrationFit fit = Fit(samples, prior);
  EXPECT_GT(fit.prior_step_time_mape, 0.1);
  EXPECT_LT(fit.fitted_step_time_mape, 0.01);
  EXPECT_NEAR(fit.calibration.fsdp_overlap_efficiency, 0.4, 0.05);
  EXPECT_NEAR(fit.calibration.gemm_peak_efficiency, 0.8, 0.02 * 0.8);
}

// Multiplies each measured value by its own factor in [1 - 3%, 1 + 3%],
// from a fixed seed.
std::vector<CalibrationSample> WithNoise(std::vector<CalibrationSample> samples,
                                         uint64_t seed) {
  std::mt19937_64 random(seed);
  auto noisy = [&](double v) {
    const double unit = static_cast<double>(random() >> 11) * 0x1p-53;
    return v * (1 + 0.03 * (2 * unit - 1));
  };
  for (CalibrationSample& s : samples) {
    s.step_time_s = noisy(s.step_time_s);
    for (std::optional<double>* v :
         {&s.compute_s, &s.comm_s, &s.exposed_comm_s, &s.watts_per_gpu}) {
      if (v->has_value()) **v = noisy(**v);
    }
  }
  return samples;
}

TEST(CalibrationFitTest, NoiseStaysNoise) {
  const Calibration truth = Truth();
  for (uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(seed);
    const CalibrationFit fit =
        Fit(WithNoise(TrialRound(truth, /*watts=*/true), seed));
    EXPECT_GT(fit.prior_step_time_mape, 0.15);
    // Uniform +-3% noise has a mean absolute value of 1.5%.
    EXPECT_LT(fit.fitted_step_time_mape, 0.025);
    const Calibration& c = fit.calibration;
    EXPECT_NEAR(c.gemm_peak_efficiency, 0.55, 0.1 * 0.55);
    EXPECT_NEAR(c.inter_node_bw_efficiency, 0.5, 0.15 * 0.5);
    EXPECT_NEAR(c.fsdp_overlap_efficiency, 0.7, 0.1);
    EXPECT_NEAR(c.power_compute_activity, 0.6, 0.05);
    // A bound only where the truth is (tp and dp overlap are 0).
    for (const std::string& name : fit.at_bound) {
      const CoefficientInfo& info = *std::find_if(
          Calibration::Infos().begin(), Calibration::Infos().end(),
          [&](const CoefficientInfo& i) { return i.name == name; });
      const double t = Value(truth, name);
      EXPECT_TRUE(t == info.min_value || t == info.max_value) << name;
    }
    ExpectUnfittedAtPrior(fit, Calibration{});
  }
}

TEST(CalibrationFitTest, ABadTrialIsLeftOutAndNamed) {
  // The round of trials with one measured 4x slower than the truth says (a
  // throttled GPU, a noisy neighbour): the fit leaves it out, names it, and
  // recovers the truth from the other twelve as if it had never run.
  const Calibration truth = Truth();
  std::vector<CalibrationSample> samples = TrialRound(truth, /*watts=*/false);
  samples[3].step_time_s *= 4;
  const CalibrationFit fit = Fit(samples);
  EXPECT_EQ(fit.excluded, std::vector<size_t>{3});
  EXPECT_EQ(fit.samples, 12);
  ASSERT_EQ(fit.residuals.size(), 13u);
  EXPECT_TRUE(fit.residuals[3].excluded);
  EXPECT_FALSE(fit.residuals[2].excluded);
  EXPECT_NEAR(fit.residuals[3].measured_step_time_s /
                  fit.residuals[3].fitted_step_time_s,
              4, 0.1 * 4);
  EXPECT_LT(fit.fitted_step_time_mape, 0.005);
  EXPECT_NEAR(fit.calibration.gemm_peak_efficiency, 0.55, 0.02 * 0.55);
  EXPECT_NEAR(fit.calibration.inter_node_bw_efficiency, 0.5, 0.02 * 0.5);
  ASSERT_FALSE(fit.warnings.empty());
  EXPECT_NE(fit.warnings.front().find("samples[3] left out as an outlier"),
            std::string::npos)
      << fit.warnings.front();

  // Without the rule the one trial drags the whole fit.
  CalibrationFitOptions keep_all;
  keep_all.outlier_log_sds = 0;
  const CalibrationFit dragged = Fit(samples, Calibration{}, keep_all);
  EXPECT_TRUE(dragged.excluded.empty());
  EXPECT_EQ(dragged.samples, 13);
  EXPECT_GT(dragged.fitted_step_time_mape, 0.05);
}

TEST(CalibrationFitTest, OutliersNeedAMajorityThatAgrees) {
  // Two samples cannot say which of them is wrong: both are fitted.
  const Calibration truth = Truth();
  std::vector<CalibrationSample> two = {TrialRound(truth, false)[0],
                                        TrialRound(truth, false)[3]};
  two[1].step_time_s *= 4;
  EXPECT_TRUE(Fit(two).excluded.empty());
  // Noise is not an outlier.
  for (uint64_t seed : {1, 2, 3}) {
    EXPECT_TRUE(Fit(WithNoise(TrialRound(truth, /*watts=*/true), seed))
                    .excluded.empty())
        << seed;
  }
  // Three cannot say either: one of them 4x slow is fitted with the rest.
  std::vector<CalibrationSample> three = {TrialRound(truth, false)[0],
                                          TrialRound(truth, false)[2],
                                          TrialRound(truth, false)[3]};
  three[2].step_time_s *= 4;
  EXPECT_TRUE(Fit(three).excluded.empty());
  // At most a quarter: five of thirteen samples 3x slow leave at most three
  // out.
  std::vector<CalibrationSample> many = TrialRound(truth, /*watts=*/false);
  for (size_t i : {1, 3, 5, 7, 11}) many[i].step_time_s *= 3;
  EXPECT_LE(Fit(many).excluded.size(), 3u);
}

TEST(CalibrationFitTest, WeightsCountRelativeToEachOther) {
  // Two measurements of the same single-rank trial, 1.0x and 1.2x the
  // prediction under the truth. With weights 1 and 3 the fit lands near
  // their weighted geometric mean: exp((ln 1 + 3 ln 1.2) / 4) = 1.1465.
  Calibration truth;
  truth.gemm_peak_efficiency = 0.6;
  const Workload w =
      MakeWorkload("small", *GpuPreset("h100-sxm"), 1, 1, 8, 2048);
  CalibrationSample a = Trial(w, "micro_batch=2", truth, {});
  CalibrationSample b = a;
  b.step_time_s *= 1.2;
  a.weight = 1;
  b.weight = 3;
  const CalibrationFit fit = Fit({a, b});
  const double mean = a.step_time_s * std::exp(3 * std::log(1.2) / 4);
  EXPECT_NEAR(fit.residuals[0].fitted_step_time_s / mean, 1, 0.005);
  // Only the ratio matters.
  a.weight = 10;
  b.weight = 30;
  EXPECT_EQ(Fit({a, b}).calibration.gemm_peak_efficiency,
            fit.calibration.gemm_peak_efficiency);
}

TEST(CalibrationFitTest, NanMeansNotMeasured) {
  std::vector<CalibrationSample> samples = TrialRound(Truth(), true);
  std::vector<CalibrationSample> with_nan = samples;
  for (CalibrationSample& s : with_nan) {
    if (!s.compute_s.has_value()) {
      s.compute_s = std::nan("");
      s.watts_per_gpu = std::nan("");
    }
  }
  for (CalibrationSample& s : samples) {
    if (!s.compute_s.has_value()) s.watts_per_gpu.reset();
  }
  EXPECT_EQ(Fit(with_nan).fitted_objective, Fit(samples).fitted_objective);
}

// A CPU described as a "GPU": 0.05 TFLOP/s, 20 GB/s memory, 5 GB/s between
// ranks (threads), 1 GB/s "network", 20 us / 100 us per collective step.
Workload CpuWorkload(const char* model, int64_t ranks, int64_t global_batch,
                     int64_t seq_len) {
  const GpuSpec cpu{.name = "cpu",
                    .peak_dense_tflops = 0.05,
                    .memory_bytes = int64_t{16} << 30,
                    .hbm_gbs = 20,
                    .nvlink_gbs = 5,
                    .inter_node_gbs = 1,
                    .tdp_w = 150,
                    .idle_w = 50};
  Workload w = MakeWorkload(model, cpu, 1, ranks, global_batch, seq_len);
  w.cluster.intra_node_latency_us = 20;
  w.cluster.inter_node_latency_us = 100;
  return w;
}

// The local quickstart's trials: the tiny model on 1 and 4 ranks at two
// sequence lengths, and the small model on 4 ranks.
std::vector<CalibrationSample> CpuTrials(const Calibration& truth) {
  const Workload one = CpuWorkload("tiny", 1, 16, 256);
  const Workload four = CpuWorkload("tiny", 4, 16, 256);
  const Workload four_long = CpuWorkload("tiny", 4, 8, 1024);
  const Workload small = CpuWorkload("small", 4, 8, 128);
  struct Entry {
    const Workload* workload;
    const char* layout;
  };
  const Entry entries[] = {
      {&one, "micro_batch=4"},
      {&one, "micro_batch=16"},
      {&four, "zero=0,micro_batch=4"},
      {&four, "tp=2,micro_batch=2"},
      {&four, "pp=2,micro_batch=1"},
      {&four, "zero=3,micro_batch=2"},
      {&four, "tp=4,micro_batch=4"},
      {&four_long, "tp=2,pp=2,micro_batch=1"},
      {&four_long, "zero=1,micro_batch=1"},
      {&small, "zero=1,micro_batch=2"},
      {&small, "tp=4,micro_batch=1"},
  };
  std::vector<CalibrationSample> samples;
  for (const Entry& e : entries) {
    samples.push_back(Trial(*e.workload, e.layout, truth, {.breakdown = true}));
  }
  return samples;
}

TEST(CalibrationFitTest, CpuLikeGpuMovesComputeByAnOrderOfMagnitude) {
  // Small GEMMs on a CPU: 10x below the GPU default efficiency, attention
  // 16x, element-wise traffic 5x, thread synchronisation 30x the latency.
  Calibration truth;
  truth.gemm_peak_efficiency = 0.08;
  truth.attention_efficiency = 0.03;
  truth.elementwise_traffic_factor = 30;
  truth.ring_latency_factor = 30;
  truth.intra_node_bw_efficiency = 0.3;
  const std::vector<CalibrationSample> samples = CpuTrials(truth);
  // The trials share one sequence length, which cannot tell the attention
  // kernel's efficiency from its sequence-length roll-off: keep the latter.
  CalibrationFitOptions options;
  options.fixed = {"attention_seq_half_tokens"};
  const CalibrationFit fit = Fit(samples, Calibration{}, options);
  for (const CalibrationSampleResidual& r : fit.residuals) {
    EXPECT_LT(r.prior_step_time_s, 0.15 * r.measured_step_time_s);
  }
  EXPECT_LT(fit.fitted_step_time_mape, 0.02);
  const Calibration& c = fit.calibration;
  EXPECT_NEAR(std::log(c.gemm_peak_efficiency / 0.08), 0, 0.1);
  EXPECT_NEAR(std::log(c.attention_efficiency / 0.03), 0, 0.1);
  EXPECT_NEAR(std::log(c.ring_latency_factor / 30), 0, 0.1);
  EXPECT_NEAR(std::log(c.intra_node_bw_efficiency / 0.3), 0, 0.1);
  // Element-wise traffic is a small share of the time here, so the prior
  // holds it back; it still moves the right way.
  EXPECT_GT(c.elementwise_traffic_factor,
            Calibration{}.elementwise_traffic_factor);
  EXPECT_TRUE(fit.warnings.empty()) << fit.warnings.front();

  // With a weak prior the same trials give back the truth.
  CalibrationFitOptions weak = options;
  weak.prior_log_sd = 10;
  const CalibrationFit free_fit = Fit(samples, Calibration{}, weak);
  EXPECT_LT(free_fit.fitted_step_time_mape, 0.001);
  // Within 15%, but for the two traffic factors, which trade off on these
  // shapes (both grow with the tokens of a small layer): within 30%.
  for (const std::string& name : free_fit.fitted) {
    const double t = Value(truth, name);
    const double tolerance =
        name == "gemm_traffic_factor" || name == "elementwise_traffic_factor"
            ? 0.3
            : 0.15;
    EXPECT_NEAR(Value(free_fit.calibration, name), t,
                std::max(tolerance * t, 0.01))
        << name;
  }
}

TEST(CalibrationFitTest, SaysWhenTheRangesCannotExplainTheTrials) {
  // The same CPU trials 100x slower than any coefficient in range allows:
  // the fit goes as far as the ranges allow and says so.
  Calibration truth;
  truth.gemm_peak_efficiency = 0.08;
  std::vector<CalibrationSample> samples = CpuTrials(truth);
  for (CalibrationSample& s : samples) {
    s.step_time_s *= 100;
    s.compute_s.reset();
    s.comm_s.reset();
    s.exposed_comm_s.reset();
  }
  const CalibrationFit fit = Fit(samples);
  // None is left out: the ranges, not a few samples, are what is wrong.
  EXPECT_TRUE(fit.excluded.empty());
  EXPECT_TRUE(Contains(fit.at_bound, "gemm_peak_efficiency"));
  EXPECT_EQ(fit.calibration.gemm_peak_efficiency, 0.05);
  EXPECT_GT(fit.fitted_step_time_mape, 0.10);
  EXPECT_LT(fit.fitted_step_time_mape, fit.prior_step_time_mape);
  ASSERT_FALSE(fit.warnings.empty());
  EXPECT_NE(fit.warnings.back().find("ranges cannot explain"),
            std::string::npos)
      << fit.warnings.back();
  EXPECT_NE(fit.warnings.back().find("gemm_peak_efficiency"),
            std::string::npos);
}

// The error of FitCalibration for `samples` (and `prior`, `options`).
absl::Status Error(const std::vector<CalibrationSample>& samples,
                   const Calibration& prior = Calibration{},
                   const CalibrationFitOptions& options = {}) {
  return FitCalibration(samples, prior, options).status();
}

void ExpectInvalid(const absl::Status& s, const char* text) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find(text), absl::string_view::npos) << s;
}

TEST(CalibrationFitTest, BadInputNamesTheSampleAndField) {
  const std::vector<CalibrationSample> good =
      TrialRound(Calibration{}, /*watts=*/true);
  ASSERT_TRUE(Error(good).ok());
  ExpectInvalid(Error({}), "samples: no samples");

  auto with = [&](size_t i, auto change) {
    std::vector<CalibrationSample> s = good;
    change(s[i]);
    return Error(s);
  };
  for (double bad : {0.0, -1.0, std::nan(""), HUGE_VAL}) {
    ExpectInvalid(with(2, [&](auto& s) { s.step_time_s = bad; }),
                  "samples[2].step_time_s");
  }
  ExpectInvalid(with(4, [](auto& s) { s.compute_s = 0; }),
                "samples[4].compute_s");
  ExpectInvalid(with(4, [](auto& s) { s.comm_s = -0.1; }), "samples[4].comm_s");
  ExpectInvalid(with(6, [](auto& s) { s.exposed_comm_s = HUGE_VAL; }),
                "samples[6].exposed_comm_s");
  ExpectInvalid(with(1, [](auto& s) { s.watts_per_gpu = -5; }),
                "samples[1].watts_per_gpu");
  ExpectInvalid(with(3, [](auto& s) { s.weight = 0; }), "samples[3].weight");
  ExpectInvalid(with(1, [](auto& s) { s.peak_allocated_bytes = -5; }),
                "samples[1].peak_allocated_bytes");
  // Sample 5 runs pp 4: its stages are 0-3; sample 1 has one.
  ExpectInvalid(with(5, [](auto& s) { s.memory_stage = 4; }),
                "samples[5].memory_stage");
  ExpectInvalid(with(1, [](auto& s) { s.memory_stage = 1; }),
                "samples[1].memory_stage");
  EXPECT_TRUE(with(5, [](auto& s) { s.memory_stage = 3; }).ok());
  ExpectInvalid(with(5, [](auto& s) { s.layout.tp = 3; }),
                "samples[5].layout: layout.tp");
  ExpectInvalid(with(7, [](auto& s) { s.layout.micro_batch = 5; }),
                "samples[7].layout: layout.micro_batch");
  ExpectInvalid(with(8, [](auto& s) { s.workload.training.seq_len = 0; }),
                "samples[8].workload: training.seq_len");
  // Zero is a valid measured comm / exposed comm time.
  EXPECT_TRUE(with(0, [](auto& s) { s.exposed_comm_s = 0; }).ok());

  Calibration prior;
  prior.gemm_peak_efficiency = 1.5;
  ExpectInvalid(Error(good, prior), "prior.gemm_peak_efficiency");
  CalibrationFitOptions options;
  options.fixed = {"gemm_peak_efficiency", "no_such_coefficient"};
  ExpectInvalid(Error(good, Calibration{}, options), "options.fixed[1]");
  options = {};
  options.prior_log_sd = 0;
  ExpectInvalid(Error(good, Calibration{}, options), "options.prior_log_sd");
  options = {};
  options.max_outlier_fraction = 0.6;
  ExpectInvalid(Error(good, Calibration{}, options),
                "options.max_outlier_fraction");
  options = {};
  options.outlier_log_sds = -1;
  ExpectInvalid(Error(good, Calibration{}, options), "options.outlier_log_sds");
}

}  // namespace
}  // namespace tessera::costmodel
