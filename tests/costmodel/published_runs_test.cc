// The cost model against published measurements of today's training stacks
// (tests/data/measured_published.json; costmodel/published/published_runs.h
// maps each row and says what it assumed). Every bound below is the issue's
// target or, where the model is better, a bound near what it reaches, so
// that a change that makes the model worse fails here. The coefficients of
// each stack were chosen against these rows (costmodel/stacks/*.json say which
// were): these are the fit's residuals, not a held-out validation.
// The printed table is the report (build/bench/costmodel/published_runs_bench
// prints the same, with --rows every row).
#include "costmodel/published/published_runs.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "costmodel/fit/prediction_uncertainty.h"
#include "costmodel/search/search.h"
#include "costmodel/stacks/stack_calibration.h"
#include "gtest/gtest.h"

namespace tessera::costmodel {
namespace {

const ValidationReport& Report() {
  static const PublishedRuns* runs = [] {
    absl::StatusOr<PublishedRuns> r = LoadPublishedRuns(
        std::string(TESSERA_SOURCE_DIR) + "/tests/data/measured_published.json");
    EXPECT_TRUE(r.ok()) << r.status();
    return new PublishedRuns(r.ok() ? *std::move(r) : PublishedRuns{});
  }();
  static const ValidationReport* report = [] {
    auto* out = new ValidationReport(ValidatePublishedRuns(*runs));
    PrintValidationReport(*out, /*rows=*/false, std::cout);
    return out;
  }();
  return *report;
}

TEST(PublishedRunsTest, EveryRowIsMappedButTheTwoWithoutAnArchitecture) {
  const ValidationReport& r = Report();
  EXPECT_EQ(r.rows.size() + r.unmapped.size(), 299u);
  std::set<int64_t> unmapped;
  for (const UnmappedRun& u : r.unmapped) unmapped.insert(u.index);
  // fms-fsdp's "34b" model: its architecture is not given.
  EXPECT_EQ(unmapped, (std::set<int64_t>{295, 296}));
}

TEST(PublishedRunsTest, RunsThatRanAreCalledFeasible) {
  // Target: at most 2% called infeasible, each explained. None is now.
  const ValidationReport& r = Report();
  for (const ValidatedRun& v : r.rows) {
    EXPECT_TRUE(v.evaluation.feasible)
        << "row " << v.run->index << " (" << v.run->source
        << "): " << v.evaluation.reason;
  }
  EXPECT_LE(r.all.infeasible, 0.02 * static_cast<double>(r.rows.size()));
}

TEST(PublishedRunsTest, ThroughputWithinTheTargets) {
  const ValidationReport& r = Report();
  // bf16 MAPE <= 10% over all rows, no source worse than 15%; fp8 <= 15%.
  EXPECT_LE(r.all_bf16.mape, 0.10);
  EXPECT_LE(r.all_fp8.mape, 0.15);
  for (const auto& [source, s] : r.by_source_bf16) {
    EXPECT_LE(s.mape, 0.15) << source;
    // No source is off in one direction by more than 12% at the median.
    EXPECT_LE(std::abs(s.median_error), 0.12) << source;
  }
  for (const auto& [source, s] : r.by_source_fp8) {
    EXPECT_LE(s.mape, 0.15) << source;
  }
  // No row is off by half.
  EXPECT_LE(std::abs(r.all.worst_error), 0.5);
}

TEST(PublishedRunsTest, PeakMemoryWhereMeasured) {
  // torchtitan reports the peak on 20 of its rows. The target is 10% on
  // every one; the model is within 10% on 14. The six it misses: the 70B
  // 2D rows (10, 11) and the 405B 1F1B rows with the most tokens in flight
  // (12, 17) are predicted 15-24% low; the H200 rows of a later torchtitan
  // (30, 31), 39% high until the compiled loss's 4 bytes per logit
  // (option compile; eager-loss for the 2024 rows), 11-13% high now.
  const std::map<int64_t, double> known = {{10, 0.25}, {11, 0.25},
                                           {12, 0.25}, {17, 0.25},
                                           {30, 0.15}, {31, 0.15}};
  int within = 0;
  for (const ValidatedRun& v : Report().rows) {
    if (!v.memory_ratio) continue;
    const double error = *v.memory_ratio - 1;
    if (std::abs(error) <= 0.10) ++within;
    const auto bound = known.find(v.run->index);
    EXPECT_LE(std::abs(error), bound == known.end() ? 0.10 : bound->second)
        << "row " << v.run->index;
  }
  EXPECT_GE(within, 14);
  EXPECT_EQ(Report().all.memory_rows, 20);
}

TEST(PublishedRunsTest, ARowSaysWhetherItGaveItsRecomputation) {
  // fms-fsdp names "Selective AC"; the SC'21 rows and Megatron-Bridge's
  // leave it unsaid (the loader assumes full and none).
  std::set<std::string> given, assumed;
  for (const ValidatedRun& v : Report().rows) {
    (v.run->recompute_given ? given : assumed).insert(v.run->source);
  }
  EXPECT_TRUE(given.contains("fms-fsdp"));
  EXPECT_TRUE(assumed.contains("megatron-lm-a100-2021"));
}

TEST(PublishedRunsTest, RankingWithinGroups) {
  // Groups of rows that differ only in layout (same source, model, GPUs,
  // precision and stack options): the predicted best is the measured best
  // in 6 of 7, and ranks correlate. (9 groups before torchtitan's 2024 rows
  // took eager-loss: two groups had merged them with 2025 rows.)
  const RankingSummary& s = Report().ranking;
  EXPECT_EQ(s.groups, 7);
  EXPECT_GE(s.best_matches, 6);
  EXPECT_GE(s.mean_spearman, 0.75);
}

// The model error a prediction with the stack defaults is quoted with
// (prediction_uncertainty.h: MAPE * sqrt(pi/2) as a log sd) is this bench's,
// to the second decimal: a change of the model that moves the MAPE must move
// the quoted error too.
TEST(PublishedRunsTest, TheQuotedModelErrorIsThisOnes) {
  const double sd_per_mape = std::sqrt(std::acos(-1.0) / 2);
  const ValidationReport& r = Report();
  EXPECT_NEAR(r.all_bf16.mape * sd_per_mape,
              DefaultPredictionUncertainty(Precision::kBf16).model_log_sd,
              0.005);
  EXPECT_NEAR(r.all_fp8.mape * sd_per_mape,
              DefaultPredictionUncertainty(Precision::kFp8).model_log_sd,
              0.005);
  EXPECT_EQ(r.all_bf16.rows, 251);
  EXPECT_EQ(r.all_fp8.rows, 46);
}

// The two reference points.
TEST(PublishedRunsTest, TheSeedStudysFsdpSetupFits) {
  // Llama-2 7B, FSDP only, 2 sequences of 4096 per GPU, no activation
  // checkpointing, H100 80 GB (128 of them): it ran.
  for (const char* stack : {"torchtitan", "pytorch-fsdp"}) {
    const Workload w{*ModelPreset("llama2-7b"),
                     MakeCluster(*GpuPreset("h100-sxm"), 16, 8),
                     TrainingConfig{.global_batch = 256,
                                    .seq_len = 4096,
                                    .stack = stack}};
    const LayoutEvaluation e = PredictLayout(
        w, Layout{.zero = 3, .micro_batch = 2}, *DefaultCalibration(w));
    EXPECT_TRUE(e.feasible) << stack << ": " << e.reason;
    EXPECT_LT(e.prediction.memory_gib_per_gpu, 80) << stack;
  }
}

TEST(PublishedRunsTest, Llama3_405bAsTrainedReachesItsPublishedMfu) {
  // Dubey et al. 2024: 16,384 H100, TP8 PP16 CP1 DP128, sequence 8192, 16
  // sequences per data-parallel rank; 38-43% MFU reported. The best the
  // Megatron-Core stack runs with that split (interleaving and recompute
  // free) should be near it; the 2021 model said about 13%.
  const Workload w{*ModelPreset("llama3-405b"),
                   MakeCluster(*GpuPreset("h100-sxm"), 2048, 8),
                   TrainingConfig{.global_batch = 2048, .seq_len = 8192}};
  double best = 0;
  for (int64_t vpp : {1, 2, 4}) {
    for (Recompute r :
         {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      const LayoutEvaluation e = PredictLayout(
          w,
          Layout{.tp = 8, .sp = true, .pp = 16, .vpp = vpp, .zero = 1,
                 .micro_batch = 1, .recompute = r},
          *DefaultCalibration(w));
      if (e.feasible) best = std::max(best, e.prediction.mfu);
    }
  }
  std::cout << "llama3-405b as trained: best predicted MFU "
            << 100 * best << "%\n";
  EXPECT_GE(best, 0.33);
  EXPECT_LE(best, 0.47);
}

}  // namespace
}  // namespace tessera::costmodel

namespace tessera::costmodel {
namespace {

// A held-out table of tests/data/, loaded as the bench loads it.
absl::StatusOr<PublishedRuns> HeldOutRuns(const std::string& file) {
  return LoadPublishedRuns(std::string(TESSERA_SOURCE_DIR) + "/tests/data/" +
                           file);
}

// What a NeMo table's row gives: its sequence, global batch and degrees.
struct NemoRow {
  std::string source;
  int64_t seq_len = 0;
  int64_t global_batch = 0;
  int64_t tp = 0;
  int64_t cp = 0;
  int64_t dp = 0;
};

// `run` maps to megatron-core in fp8 with `row`'s figures.
void ExpectNemoFp8Run(const PublishedRun& run, const NemoRow& row) {
  EXPECT_EQ(run.source, row.source);
  EXPECT_EQ(run.workload.training.stack, "megatron-core");
  EXPECT_EQ(run.workload.training.precision, Precision::kFp8);
  EXPECT_EQ(run.workload.training.seq_len, row.seq_len);
  EXPECT_EQ(run.workload.training.global_batch, row.global_batch);
  EXPECT_EQ(run.layout.tp, row.tp);
  EXPECT_EQ(run.layout.cp, row.cp);
  EXPECT_EQ(run.layout.dp, row.dp);
}

// NeMo's long-sequence table (tests/data/nemo_long_sequence.json): held out,
// no coefficient was chosen against it. The target (MAPE <= 12%) is
// not met; the bound below only keeps the model from getting worse there.
TEST(LongSequenceRunsTest, NemoRowsMapAsPublished) {
  absl::StatusOr<PublishedRuns> runs = HeldOutRuns("nemo_long_sequence.json");
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->runs.size(), 9u);
  EXPECT_TRUE(runs->unmapped.empty());
  const PublishedRun& longest = runs->runs.back();
  ExpectNemoFp8Run(longest, {.source = "nemo-long-sequence",
                             .seq_len = 1048576,
                             .global_batch = 4,
                             .tp = 8,
                             .cp = 32,
                             .dp = 4});
  // The table does not say which recomputation ran: assumed none, and
  // marked so (published_runs_bench --unstated-recompute tries the others).
  EXPECT_FALSE(longest.recompute_given);
  EXPECT_EQ(longest.layout.recompute, Recompute::kNone);
  // 536 TFLOP/s over NeMo's Llama-2 count at s = 2^20: 32 * 4096^2 * (12 +
  // 12 + 18 * 11008/4096 + 12 * 2^20/4096) + 6 * 32000 * 4096 = 1.68891e12
  // FLOP per token.
  EXPECT_NEAR(longest.measured_tokens_per_s_per_gpu, 536e12 / 1.688906e12,
              0.1);
}

TEST(LongSequenceRunsTest, HeldOutErrorDoesNotGrow) {
  absl::StatusOr<PublishedRuns> runs = HeldOutRuns("nemo_long_sequence.json");
  ASSERT_TRUE(runs.ok()) << runs.status();
  const ValidationReport r = ValidatePublishedRuns(*runs);
  PrintValidationReport(r, /*rows=*/true, std::cout);
  // 2026-11-28: MAPE 27.0%, every row from 8K on over-predicted (+4.9% at
  // 8K rising to +43.7% at 1M), the 4K row called infeasible (90.6 GiB);
  // 2026-11-29: 21.5%.
  EXPECT_LE(r.all.mape, 0.23);
  EXPECT_LE(r.all.infeasible, 1);
}

// NeMo 24.07's standard FP8 pre-training table (tests/data/
// nemo_performance_summary.json): held out, no coefficient was chosen
// against it. 2026-11-29: MAPE 3.2% (bias -3.0%), every run fits.
TEST(NemoPerformanceSummaryTest, RowsMapWithTheReproductionScriptsSettings) {
  absl::StatusOr<PublishedRuns> runs =
      HeldOutRuns("nemo_performance_summary.json");
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->runs.size(), 5u);
  EXPECT_TRUE(runs->unmapped.empty());
  const PublishedRun& llama3_70b = runs->runs.back();
  ExpectNemoFp8Run(llama3_70b, {.source = "nemo-24.07",
                                .seq_len = 8192,
                                .global_batch = 128,
                                .tp = 4,
                                .cp = 2,
                                .dp = 2});
  EXPECT_EQ(llama3_70b.layout.pp, 4);
  EXPECT_EQ(llama3_70b.layout.vpp, 5);
  // NVIDIA's scripts for the table reduce gradients in bf16.
  const std::vector<std::string>& options =
      llama3_70b.workload.training.stack_options;
  EXPECT_NE(std::find(options.begin(), options.end(), "grad-reduce-bf16"),
            options.end());
  EXPECT_DOUBLE_EQ(llama3_70b.measured_tokens_per_s_per_gpu, 1524);
}

TEST(NemoPerformanceSummaryTest, HeldOutErrorStaysSmallAndEveryRunFits) {
  absl::StatusOr<PublishedRuns> runs =
      HeldOutRuns("nemo_performance_summary.json");
  ASSERT_TRUE(runs.ok()) << runs.status();
  const ValidationReport r = ValidatePublishedRuns(*runs);
  PrintValidationReport(r, /*rows=*/true, std::cout);
  EXPECT_LE(r.all.mape, 0.06);
  // The runs ran: none may be called too big for the GPU (with fp32
  // gradient buffers the 7B and 8B rows were, at 80.5 and 95.8 GiB).
  EXPECT_EQ(r.all.infeasible, 0);
}

}  // namespace
}  // namespace tessera::costmodel
