// The GPU count as a searched dimension (costmodel/search/scale_search.h) and
// the run's trade-off across counts (scale_front.h): hand computations of
// the per-token figures, the front and the choice, and issue 33's target on
// the llama2-7b 256 x 8 H100 torchtitan example.
#include "costmodel/search/scale_search.h"

#include <algorithm>
#include <set>

#include "gtest/gtest.h"
#include "costmodel/stacks/stack_calibration.h"

namespace tessera::costmodel {
namespace {

// A point with the given per-token figures (no layout, no budget).
ScalePoint Point(int64_t gpus, double seconds, double joules,
                 double gpu_seconds) {
  ScalePoint p;
  p.gpus = gpus;
  p.nodes = gpus / 8;
  p.seconds_per_token = seconds;
  p.joules_per_token = joules;
  p.gpu_seconds_per_token = gpu_seconds;
  p.full_run = FullRunPrediction{.days = seconds * 1e6 / 86400,
                                 .energy_mwh = joules * 1e6 / 3.6e9,
                                 .gpu_hours = gpu_seconds * 1e6 / 3600};
  return p;
}

TEST(ScaleFrontTest, PointByHand) {
  // 1000 of 2000 H100s (idle 70 W) at 1e6 tokens/s and 2 tokens/J (600 W).
  Workload w{*ModelPreset("llama2-7b"),
             MakeCluster(*GpuPreset("h100-sxm"), 125, 8),
             TrainingConfig{.global_batch = 1000, .seq_len = 4096,
                            .total_tokens = 1e12}};
  LayoutEvaluation e;
  e.feasible = true;
  e.prediction.tokens_per_s = 1e6;
  e.prediction.tokens_per_joule = 2;
  e.prediction.watts_per_gpu = 600;
  const ScalePoint free = MakeScalePoint(w, 2000, e, false);
  EXPECT_EQ(free.gpus, 1000);
  EXPECT_EQ(free.nodes, 125);
  EXPECT_DOUBLE_EQ(free.seconds_per_token, 1e-6);
  EXPECT_DOUBLE_EQ(free.joules_per_token, 0.5);
  EXPECT_EQ(free.idle_joules_per_token, 0);
  EXPECT_DOUBLE_EQ(free.gpu_seconds_per_token, 1e-3);
  ASSERT_TRUE(free.full_run.has_value());
  // 1e12 tokens: 1e6 s = 11.57 days, 0.5e12 J = 138.9 MWh, 277,778 GPU-h.
  EXPECT_NEAR(free.full_run->days, 1e6 / 86400, 1e-9);
  EXPECT_NEAR(free.full_run->energy_mwh, 0.5e12 / 3.6e9, 1e-9);
  EXPECT_NEAR(free.full_run->gpu_hours, 1e6 / 3600 * 1000, 1e-6);
  // Charged: the other 1000 GPUs idle at 70 W for 1e-6 s per token.
  const ScalePoint charged = MakeScalePoint(w, 2000, e, true);
  EXPECT_DOUBLE_EQ(charged.idle_joules_per_token, 1000 * 70 * 1e-6);
  EXPECT_DOUBLE_EQ(charged.joules_per_token, 0.5 + 0.07);
  EXPECT_NEAR(charged.full_run->energy_mwh, 0.57e12 / 3.6e9, 1e-9);
  EXPECT_DOUBLE_EQ(charged.gpu_seconds_per_token, 1e-3);  // the job's only
  // The whole cluster: nothing to charge.
  EXPECT_EQ(MakeScalePoint(w, 1000, e, true).idle_joules_per_token, 0);
}

TEST(ScaleFrontTest, FrontKeepsTheUndominatedFastestFirst) {
  const std::vector<ScalePoint> points = {
      Point(64, 2, 2, 128),   // dominated by the 32-GPU point below
      Point(128, 1, 3, 128),  // fastest
      Point(32, 2, 1, 64),    // least energy and GPU-hours
      Point(32, 2, 1, 64),    // equal to the one before: dropped
      Point(16, 4, 1, 64),    // slower for the same energy: dominated
      Point(64, 1.5, 2.5, 96),
  };
  const std::vector<ScalePoint> front = ScaleFront(points);
  ASSERT_EQ(front.size(), 3u);
  EXPECT_EQ(front[0].gpus, 128);
  EXPECT_EQ(front[1].gpus, 64);
  EXPECT_EQ(front[1].seconds_per_token, 1.5);
  EXPECT_EQ(front[2].gpus, 32);
}

TEST(ScaleFrontTest, ObjectivesAndDeadlines) {
  // Days per point: seconds * 1e6 / 86400.
  const std::vector<ScalePoint> front = {
      Point(128, 1, 3, 128), Point(64, 1.5, 2.5, 96), Point(32, 2, 1, 64)};
  EXPECT_EQ(ChooseOnFront(front, RunObjective::kTime, std::nullopt).index, 0u);
  EXPECT_EQ(ChooseOnFront(front, RunObjective::kEnergy, std::nullopt).index,
            2u);
  EXPECT_EQ(ChooseOnFront(front, RunObjective::kGpuHours, std::nullopt).index,
            2u);
  // A deadline between the 64- and the 32-GPU runs: the least energy that
  // meets it is the 64-GPU run.
  const double days_64 = 1.5e6 / 86400;
  ScaleChoice c = ChooseOnFront(front, RunObjective::kEnergy, days_64 + 1e-9);
  EXPECT_EQ(c.index, 1u);
  EXPECT_TRUE(c.meets_deadline);
  c = ChooseOnFront(front, RunObjective::kEnergy, days_64 - 1e-9);
  EXPECT_EQ(c.index, 0u);
  EXPECT_TRUE(c.meets_deadline);
  // Nothing meets it: the fastest, flagged.
  c = ChooseOnFront(front, RunObjective::kEnergy, 1.0 / 86400);
  EXPECT_EQ(c.index, 0u);
  EXPECT_FALSE(c.meets_deadline);
}

TEST(ScaleFrontTest, MarginalCostInWords) {
  // 2048 GPUs: 0.82 of the 1024-GPU time for 1.41 of its energy.
  const std::vector<ScalePoint> front = {Point(2048, 0.82, 1.41, 2048 * 0.82),
                                         Point(1024, 1, 1, 1024)};
  const std::vector<MarginalCost> costs = MarginalCosts(front);
  ASSERT_EQ(costs.size(), 1u);
  EXPECT_EQ(costs[0].more_gpus, 2048);
  EXPECT_EQ(costs[0].fewer_gpus, 1024);
  EXPECT_NEAR(costs[0].time_saved_fraction, 0.18, 1e-12);
  EXPECT_NEAR(costs[0].extra_energy_fraction, 0.41, 1e-12);
  EXPECT_NEAR(costs[0].extra_gpu_hours_fraction, 2 * 0.82 - 1, 1e-12);
  EXPECT_EQ(DescribeMarginalCost(costs[0]),
            "the last 1,024 GPUs (2,048 rather than 1,024) shorten the run by "
            "18% for 41% more energy");
  EXPECT_EQ(GroupedCount(16384), "16,384");
  EXPECT_EQ(GroupedCount(999), "999");
  EXPECT_EQ(GroupedCount(1000000), "1,000,000");
  // One count on the front: nothing to compare.
  EXPECT_TRUE(MarginalCosts({Point(8, 1, 1, 8), Point(8, 2, 0.5, 16)}).empty());
}

TEST(ScaleSearchTest, LadderOfNodeCounts) {
  EXPECT_EQ(NodeCountLadder(1), (std::vector<int64_t>{1}));
  EXPECT_EQ(NodeCountLadder(5), (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(NodeCountLadder(6), (std::vector<int64_t>{1, 2, 3, 4, 6}));
  EXPECT_EQ(NodeCountLadder(256),
            (std::vector<int64_t>{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96,
                                  128, 192, 256}));
  EXPECT_EQ(NodeCountLadder(2048).size(), 22u);
  EXPECT_EQ(NodeCountLadder(2048).back(), 2048);
}

TEST(ScaleSearchTest, BadOptionsNameTheField) {
  Workload w{*ModelPreset("tiny"), MakeCluster(*GpuPreset("h100-sxm"), 4, 8),
             TrainingConfig{.global_batch = 64, .seq_len = 64}};
  ScaleOptions o;
  o.node_counts = {2, 5};
  absl::StatusOr<ScaleResult> r = SearchScale(w, Calibration{}, o);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("search.scale.node_counts: 5 nodes"),
            absl::string_view::npos)
      << r.status();
  o.node_counts = {};
  o.deadline_days = 3;
  r = SearchScale(w, Calibration{}, o);
  EXPECT_NE(r.status().message().find("search.scale.deadline_days: a "
                                      "deadline needs the token budget"),
            absl::string_view::npos)
      << r.status();
  w.training.total_tokens = 1e9;
  o.deadline_days = -1;
  EXPECT_NE(SearchScale(w, Calibration{}, o).status().message().find(
                "search.scale.deadline_days: must be positive"),
            absl::string_view::npos);
  EXPECT_FALSE(ParseRunObjective("power").ok());
  EXPECT_EQ(*ParseRunObjective("gpu-hours"), RunObjective::kGpuHours);
}

TEST(ScaleSearchTest, CountsWithoutTheBatchAreSkipped) {
  // tiny (8 heads, 4 layers) with one 2-token sequence per step: tp*pp <=
  // 32 and cp 1, so dp = 1 needs at most 32 GPUs: 1 to 4 nodes of 8.
  Workload w{*ModelPreset("tiny"), MakeCluster(*GpuPreset("h100-sxm"), 8, 8),
             TrainingConfig{.global_batch = 1, .seq_len = 2}};
  absl::StatusOr<ScaleResult> r = SearchScale(w, Calibration{}, {});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->counts.size(), 6u);  // 1, 2, 3, 4, 6, 8
  for (const ScaleCount& c : r->counts) {
    SCOPED_TRACE(c.nodes);
    EXPECT_EQ(c.gpus, 8 * c.nodes);
    EXPECT_EQ(c.skipped.empty(), c.nodes <= 4) << c.skipped;
    if (!c.skipped.empty()) {
      EXPECT_EQ(c.skipped.rfind("training.global_batch: ", 0), 0u);
    }
  }
  ASSERT_FALSE(r->front.empty());
  EXPECT_LE(r->chosen()->gpus, 32);
  // On one node of 3 GPUs no count reaches it: the search's error.
  Workload three{*ModelPreset("tiny"), MakeCluster(*GpuPreset("h100-sxm"), 1, 3),
                 TrainingConfig{.global_batch = 4, .seq_len = 4}};
  three.model.heads = three.model.kv_heads = 2;
  three.model.layers = 2;
  r = SearchScale(three, Calibration{}, {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message().rfind("training.global_batch: ", 0), 0u)
      << r.status();
}

// Issue 33's workload: llama2-7b on 256 x 8 H100 under torchtitan, 4096 x
// 4096 tokens per step, 1e12 tokens.
Workload ExampleWorkload() {
  return Workload{*ModelPreset("llama2-7b"),
                  MakeCluster(*GpuPreset("h100-sxm"), 256, 8),
                  TrainingConfig{.global_batch = 4096,
                                 .seq_len = 4096,
                                 .total_tokens = 1e12,
                                 .stack = "torchtitan"}};
}

// The least-energy point of a front.
const ScalePoint& LeastEnergy(const std::vector<ScalePoint>& front) {
  const ScalePoint* frugal = &front.front();
  for (const ScalePoint& p : front) {
    if (p.joules_per_token < frugal->joules_per_token) frugal = &p;
  }
  return *frugal;
}

TEST(ScaleSearchTest, FrontAcrossCountsOnTheExample) {
  const Workload w = ExampleWorkload();
  const Calibration c = *DefaultCalibration(w);
  absl::StatusOr<ScaleResult> r = SearchScale(w, c, ScaleOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->cluster_gpus, 2048);
  EXPECT_EQ(r->counts.size(), 16u);  // the ladder of 256 nodes
  std::set<int64_t> counts;
  for (const ScalePoint& p : r->front) counts.insert(p.gpus);
  EXPECT_GE(counts.size(), 3u);  // the target: a front of >= 3 counts
  const ScalePoint& fastest = r->front.front();
  EXPECT_EQ(fastest.gpus, 2048);
  // The least energy uses fewer GPUs. The model keeps this workload's
  // communication hidden up to 2048 GPUs (2 sequences of 4096 tokens per
  // GPU under ZeRO-2), so it saves under 1%: issue 33's >= 10% is not
  // reached here (docs/user-guide.md says why; count_series_bench shows the model
  // missing the published per-GPU fall with the count).
  const ScalePoint& frugal = LeastEnergy(r->front);
  EXPECT_LT(frugal.gpus, fastest.gpus);
  EXPECT_LT(frugal.joules_per_token, fastest.joules_per_token);
  // The objective time picks the fastest; each front point is its count's
  // own prediction of that layout, with the global batch kept.
  EXPECT_EQ(r->choice.index, 0u);
  for (const ScalePoint& p : r->front) {
    const LayoutEvaluation again =
        PredictLayout(WorkloadOnNodes(w, p.nodes), p.evaluation.layout, c);
    ASSERT_TRUE(again.feasible);
    EXPECT_DOUBLE_EQ(again.prediction.tokens_per_s,
                     p.evaluation.prediction.tokens_per_s);
    EXPECT_EQ(p.gpus, p.evaluation.layout.world_size());
    EXPECT_EQ(p.evaluation.layout.micro_batch * p.evaluation.layout.dp *
                  p.evaluation.layout.grad_accum,
              4096);
  }
}

TEST(ScaleSearchTest, CountsSearchedAtOnceAnswerAsOneAfterAnother) {
  // The local search runs the counts on every core; the callback overload
  // (the planner service's route) one after another. Same answer.
  Workload w = ExampleWorkload();
  w.cluster.nodes = 24;  // 24 counts, some of them odd
  const Calibration c = *DefaultCalibration(w);
  ScaleOptions o;
  for (int64_t n = 1; n <= 24; ++n) o.node_counts.push_back(n);
  absl::StatusOr<ScaleResult> parallel = SearchScale(w, c, o);
  absl::StatusOr<ScaleResult> serial =
      SearchScale(w, o, [&](const Workload& at) {
        return SearchLayouts(at, c, o.layouts);
      });
  ASSERT_TRUE(parallel.ok()) << parallel.status();
  ASSERT_TRUE(serial.ok()) << serial.status();
  ASSERT_EQ(parallel->counts.size(), serial->counts.size());
  for (size_t i = 0; i < serial->counts.size(); ++i) {
    const ScaleCount& a = parallel->counts[i];
    const ScaleCount& b = serial->counts[i];
    EXPECT_EQ(a.nodes, b.nodes);
    EXPECT_EQ(a.skipped, b.skipped);
    EXPECT_EQ(a.search.searched, b.search.searched);
    EXPECT_EQ(a.search.rejected, b.search.rejected);
    EXPECT_EQ(a.search.best_throughput.layout, b.search.best_throughput.layout);
  }
  ASSERT_EQ(parallel->front.size(), serial->front.size());
  for (size_t i = 0; i < serial->front.size(); ++i) {
    EXPECT_EQ(parallel->front[i].gpus, serial->front[i].gpus);
    EXPECT_EQ(parallel->front[i].evaluation.layout,
              serial->front[i].evaluation.layout);
  }
  EXPECT_EQ(parallel->chosen_count, serial->chosen_count);
}

TEST(ScaleSearchTest, EnergyOptimalCountWhereCommunicationStopsHiding) {
  // llama3-70b on 256 x 8 H100 under torchtitan, 512 x 8192 tokens per
  // step: on 2048 GPUs each holds a quarter sequence of compute per step
  // and the communication no longer hides.
  const Workload w{*ModelPreset("llama3-70b"),
                   MakeCluster(*GpuPreset("h100-sxm"), 256, 8),
                   TrainingConfig{.global_batch = 512,
                                  .seq_len = 8192,
                                  .total_tokens = 1e12,
                                  .stack = "torchtitan"}};
  absl::StatusOr<ScaleResult> r =
      SearchScale(w, *DefaultCalibration(w), ScaleOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  std::set<int64_t> counts;
  for (const ScalePoint& p : r->front) counts.insert(p.gpus);
  EXPECT_GE(counts.size(), 3u);
  const ScalePoint& fastest = r->front.front();
  const ScalePoint& frugal = LeastEnergy(r->front);
  EXPECT_LT(frugal.gpus, fastest.gpus);
  EXPECT_LE(frugal.full_run->energy_mwh, 0.9 * fastest.full_run->energy_mwh);
  // Why: tokens/s per GPU falls with the GPUs while watts per GPU stay
  // within a few percent, and the fastest step waits longer.
  const Prediction& f = fastest.evaluation.prediction;
  const Prediction& g = frugal.evaluation.prediction;
  EXPECT_GT(g.tokens_per_s_per_gpu, 1.1 * f.tokens_per_s_per_gpu);
  EXPECT_NEAR(g.watts_per_gpu / f.watts_per_gpu, 1, 0.05);
  EXPECT_GT((f.exposed_comm_s + f.bubble_s) / f.step_time_s,
            (g.exposed_comm_s + g.bubble_s) / g.step_time_s);
  // What the last GPUs buy: time for more energy.
  const std::vector<MarginalCost> costs = MarginalCosts(r->front);
  ASSERT_FALSE(costs.empty());
  EXPECT_EQ(costs[0].more_gpus, 2048);
  EXPECT_GT(costs[0].time_saved_fraction, 0);
  EXPECT_GT(costs[0].extra_energy_fraction, 0.05);
}

TEST(ScaleSearchTest, DeadlinePicksTheLeastEnergyThatMeetsIt) {
  const Workload w = ExampleWorkload();
  const Calibration c = *DefaultCalibration(w);
  ScaleOptions o;
  absl::StatusOr<ScaleResult> fastest = SearchScale(w, c, o);
  ASSERT_TRUE(fastest.ok()) << fastest.status();
  const double days = fastest->front.front().full_run->days;
  o.objective = RunObjective::kEnergy;
  o.deadline_days = 2 * days;
  absl::StatusOr<ScaleResult> r = SearchScale(w, c, o);
  ASSERT_TRUE(r.ok()) << r.status();
  const ScalePoint& chosen = *r->chosen();
  EXPECT_TRUE(r->choice.meets_deadline);
  EXPECT_LE(chosen.full_run->days, 2 * days);
  EXPECT_LT(chosen.gpus, 2048);
  // No point of any count that meets the deadline uses less energy.
  for (size_t i = 0; i < r->counts.size(); ++i) {
    const std::optional<ScalePoint> best = BestOfCount(w, *r, i, o);
    if (!best || best->full_run->days > 2 * days) continue;
    EXPECT_GE(best->joules_per_token, chosen.joules_per_token) << best->gpus;
  }
  // Charging the unused GPUs' idle power moves the choice up (or keeps it)
  // and costs more energy.
  o.charge_idle_gpus = true;
  absl::StatusOr<ScaleResult> charged = SearchScale(w, c, o);
  ASSERT_TRUE(charged.ok()) << charged.status();
  EXPECT_GE(charged->chosen()->gpus, chosen.gpus);
  EXPECT_GT(charged->chosen()->full_run->energy_mwh,
            chosen.full_run->energy_mwh);
}

}  // namespace
}  // namespace tessera::costmodel
