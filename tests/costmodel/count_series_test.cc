// The cost model against published runs of one model at several GPU counts
// (costmodel/published/count_series.h). The series are built by hand from
// three synthetic rows, then from tests/data/measured_published.json with
// bounds near what the model reaches (a change that makes it worse fails
// here). The printed table is the report (build/bench/costmodel/
// count_series_bench prints the same).
#include "costmodel/published/count_series.h"

#include <cmath>
#include <iostream>
#include <set>
#include <string>

#include "gtest/gtest.h"

namespace tessera::costmodel {
namespace {

// A feasible validated row: `gpus` H100s of llama2-7b, measured and
// predicted tokens/s per GPU.
struct Row {
  PublishedRun run;
  ValidatedRun validated;
};

Row MakeRow(int64_t index, int64_t gpus, int64_t micro_batch, double measured,
            double predicted) {
  Row r;
  r.run.index = index;
  r.run.source = "src";
  r.run.model = "llama2-7b";
  r.run.workload =
      Workload{*ModelPreset("llama2-7b"),
               MakeCluster(*GpuPreset("h100-sxm"), gpus / 8, 8),
               TrainingConfig{.global_batch = gpus * micro_batch,
                              .seq_len = 4096}};
  r.run.layout.dp = gpus;
  r.run.layout.zero = 3;
  r.run.layout.shard_group = gpus;
  r.run.layout.micro_batch = micro_batch;
  r.run.measured_tokens_per_s_per_gpu = measured;
  r.validated.evaluation.feasible = true;
  r.validated.evaluation.layout = r.run.layout;
  r.validated.evaluation.prediction.tokens_per_s_per_gpu = predicted;
  r.validated.error = predicted / measured - 1;
  return r;
}

TEST(CountSeriesTest, SeriesAndScalingByHand) {
  std::vector<Row> rows;
  rows.push_back(MakeRow(0, 64, 2, 1000, 1000));
  rows.push_back(MakeRow(1, 8, 2, 1050, 1000));   // the smallest count
  rows.push_back(MakeRow(2, 16, 4, 1000, 1000));  // another micro-batch
  rows.push_back(MakeRow(3, 16, 4, 1000, 900));
  ValidationReport report;
  for (Row& r : rows) report.rows.push_back(r.validated);
  for (size_t i = 0; i < rows.size(); ++i) report.rows[i].run = &rows[i].run;
  const std::vector<CountSeries> series = SeriesByGpuCount(report);
  // Rows 1 and 0 (8 and 64 GPUs); rows 2 and 3 share one count: no series.
  ASSERT_EQ(series.size(), 1u);
  ASSERT_EQ(series[0].rows.size(), 2u);
  EXPECT_EQ(series[0].rows[0]->run->index, 1);
  EXPECT_EQ(series[0].rows[1]->run->index, 0);
  EXPECT_NE(series[0].key.find("mb2"), std::string::npos) << series[0].key;
  const CountSeriesSummary s = SummarizeCountSeries(series);
  EXPECT_EQ(s.series, 1);
  EXPECT_EQ(s.rows, 2);
  // Errors: 1000/1050 - 1 = -4.8% and 0: both within 10%.
  EXPECT_NEAR(s.mape, (1 - 1000.0 / 1050) / 2, 1e-12);
  EXPECT_EQ(s.within_10pct, 2);
  // Scaling at 64 GPUs: measured 1000/1050, predicted 1: error 1.05 - 1.
  EXPECT_EQ(s.scaling_rows, 1);
  EXPECT_NEAR(s.scaling_mape, 0.05, 1e-12);
  EXPECT_EQ(s.scaling_within_10pct, 1);
}

TEST(CountSeriesTest, PublishedRunsAtSeveralCounts) {
  absl::StatusOr<PublishedRuns> runs = LoadPublishedRuns(
      std::string(TESSERA_SOURCE_DIR) + "/tests/data/measured_published.json");
  ASSERT_TRUE(runs.ok()) << runs.status();
  const ValidationReport report = ValidatePublishedRuns(*runs);
  const std::vector<CountSeries> series = SeriesByGpuCount(report);
  PrintCountSeries(series, std::cout);
  for (const CountSeries& s : series) {
    std::set<int64_t> counts;
    for (const ValidatedRun* v : s.rows) {
      counts.insert(v->run->workload.cluster.world_size());
    }
    EXPECT_GE(counts.size(), 2u) << s.key;
  }
  const CountSeriesSummary sum = SummarizeCountSeries(series);
  // torchtitan, llm-foundry (H100 and A100) and the Trainy H200 rows.
  EXPECT_GE(sum.series, 20);
  EXPECT_GE(sum.rows, 60);
  // Near what the model reaches today (7.8%, 46 of 69; scaling 4.8%, 41 of
  // 46): tokens/s per GPU within 10% on average, and its fall with the
  // count within 10% for most rows.
  EXPECT_LE(sum.mape, 0.09);
  EXPECT_GE(sum.within_10pct, 44);
  EXPECT_LE(sum.scaling_mape, 0.055);
  EXPECT_GE(sum.scaling_within_10pct, 40);
}

}  // namespace
}  // namespace tessera::costmodel
