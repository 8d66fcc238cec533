// The recommendation's numbers against an independent computation with the
// cost model: a trial run at a smaller data-parallel degree is scaled to the
// study's world by the calibrated model's ratio.
#include "service/recommendation.h"

#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "costmodel/prediction.h"

namespace tessera::service {
namespace {

// A trial at the study's own scale: `why` explains the step with the same
// measured figures the fields report (here exposed communication is a quarter
// of the measured step), not with the model's.
TEST(RecommendationTest, AFullScaleMeasurementExplainsItsOwnStep) {
  const Workload w{
      *ModelPreset("tiny"), MakeCluster(*GpuPreset("h100-sxm"), 1, 2),
      TrainingConfig{.global_batch = 16, .seq_len = 128, .total_tokens = 1e9}};
  const costmodel::Calibration calibration;
  absl::StatusOr<TrialPool> pool =
      BuildTrialPool(w, calibration, {.top = 8}, /*available_agents=*/1, 0);
  ASSERT_TRUE(pool.ok()) << pool.status();
  const PoolEntry* entry = nullptr;
  for (const PoolEntry& e : pool->entries) {
    if (e.plan.has_value() && !e.plan->scaled()) {
      entry = &e;
      break;
    }
  }
  ASSERT_NE(entry, nullptr);
  db::Trial t;
  t.id = 5;
  t.layout = entry->plan->layout;
  t.gang_size = 1;
  t.status = db::TrialState::kOk;
  db::TrialMeasurement m;
  m.backend = "cpu";
  m.steps = 3;
  m.tokens_per_s = 4096;  // 16 x 128 tokens per step: a 0.5 s step
  m.exposed_comm_s = 0.125;
  m.peak_memory_bytes = int64_t{3} << 20;  // 3 MiB
  t.measured = m;
  const std::vector<db::Trial> trials = {t};
  RecommendationInput in;
  in.study_id = 1;
  in.final = true;
  in.workload = &w;
  in.pool = &*pool;
  in.trials = &trials;
  in.calibration = &calibration;
  const v1::Recommendation r = BuildRecommendation(in);
  const v1::RecommendedLayout& best = r.best_throughput();
  ASSERT_EQ(best.provenance(), v1::MEASURED);
  EXPECT_DOUBLE_EQ(best.step_time_s(), 0.5);
  EXPECT_DOUBLE_EQ(best.exposed_comm_s(), 0.125);
  EXPECT_NE(best.why().find("exposed communication 25% of the step (measured)"),
            std::string::npos)
      << best.why();
  EXPECT_DOUBLE_EQ(best.memory_gib_per_gpu(), 3.0 / 1024);
  EXPECT_NE(best.why().find("memory 0.00293 of"), std::string::npos)
      << best.why();
  EXPECT_NE(best.why().find("headroom, measured)"), std::string::npos)
      << best.why();

  // A command trial reports no communication: its 0 is not a measurement,
  // and the model's exposed communication stands.
  std::vector<db::Trial> command = trials;
  command[0].measured->backend = "command";
  command[0].measured->exposed_comm_s = 0;
  in.trials = &command;
  const v1::RecommendedLayout by_command =
      BuildRecommendation(in).best_throughput();
  EXPECT_EQ(by_command.provenance(), v1::MEASURED);
  EXPECT_DOUBLE_EQ(by_command.exposed_comm_s(),
                   best.predicted().exposed_comm_s());
  EXPECT_NE(by_command.why().find("of the step (predicted)"),
            std::string::npos)
      << by_command.why();
}

TEST(RecommendationTest, AScaledDownMeasurementIsScaledByTheModelsRatio) {
  const Workload w{
      *ModelPreset("tiny"), MakeCluster(*GpuPreset("h100-sxm"), 4, 2),
      TrainingConfig{.global_batch = 16, .seq_len = 128, .total_tokens = 1e9}};
  const costmodel::Calibration calibration;
  absl::StatusOr<TrialPool> pool =
      BuildTrialPool(w, calibration, {.top = 8}, /*available_agents=*/1, 0);
  ASSERT_TRUE(pool.ok()) << pool.status();
  const PoolEntry* entry = nullptr;
  for (const PoolEntry& e : pool->entries) {
    if (e.plan.has_value()) {
      entry = &e;
      break;
    }
  }
  ASSERT_NE(entry, nullptr);
  ASSERT_TRUE(entry->plan->scaled());
  ASSERT_LT(entry->plan->layout.dp, entry->study.layout.dp);

  // The trial measured 80% of what the model predicted for the trial.
  const costmodel::LayoutEvaluation trial_prediction = costmodel::PredictLayout(
      entry->plan->workload, entry->plan->layout, calibration);
  ASSERT_TRUE(trial_prediction.feasible);
  db::Trial t;
  t.id = 7;
  t.layout = entry->plan->layout;
  t.rung = 1;
  t.gang_size = 1;
  t.status = db::TrialState::kOk;
  db::TrialMeasurement m;
  m.backend = "cpu";
  m.steps = 6;
  m.tokens_per_s = 0.8 * trial_prediction.prediction.tokens_per_s;
  m.tokens_per_s_per_gpu =
      m.tokens_per_s / static_cast<double>(t.layout.world_size());
  t.measured = m;
  const std::vector<db::Trial> trials = {t};

  RecommendationInput in;
  in.study_id = 3;
  in.final = true;
  in.workload = &w;
  in.pool = &*pool;
  in.trials = &trials;
  in.calibration = &calibration;
  in.history_db = "/tmp/h.db";
  const v1::Recommendation r = BuildRecommendation(in);

  const costmodel::LayoutEvaluation study_prediction =
      costmodel::PredictLayout(w, entry->study.layout, calibration);
  const double expected = m.tokens_per_s *
                          study_prediction.prediction.tokens_per_s /
                          trial_prediction.prediction.tokens_per_s;
  // The measured layout is the best (measured wins over predicted).
  const v1::RecommendedLayout& best = r.best_throughput();
  EXPECT_EQ(best.provenance(), v1::MEASURED);
  EXPECT_EQ(best.trial_id(), 7);
  EXPECT_NEAR(best.tokens_per_s(), expected, 1e-9 * expected);
  EXPECT_NEAR(best.tokens_per_s(),
              0.8 * study_prediction.prediction.tokens_per_s, 1e-9 * expected);
  EXPECT_NEAR(best.step_time_s(), 16.0 * 128 / expected, 1e-12);
  // Energy: the model's watts (CPU trials measure none).
  EXPECT_EQ(best.energy_provenance(), v1::PREDICTED);
  const double tokens_per_joule =
      expected / (study_prediction.prediction.watts_per_gpu * 8);
  EXPECT_NEAR(best.tokens_per_joule(), tokens_per_joule,
              1e-9 * tokens_per_joule);
  EXPECT_NEAR(best.full_run().days(), 1e9 / expected / 86400, 1e-12);
  EXPECT_NEAR(best.full_run().gpu_hours(), 8 * 1e9 / expected / 3600, 1e-9);
  EXPECT_NEAR(best.full_run().energy_mwh(), 1e9 / tokens_per_joule / 3.6e9,
              1e-12);
  EXPECT_NE(best.why().find(entry->plan->note), std::string::npos)
      << best.why();
  EXPECT_NE(best.why().find("to the study's 8 GPUs"), std::string::npos)
      << best.why();
  // The others are the model's, labelled so; the front is sorted.
  ASSERT_GE(r.pareto_size(), 1);
  for (int i = 1; i < r.pareto_size(); ++i) {
    EXPECT_GT(r.pareto(i - 1).tokens_per_s(), r.pareto(i).tokens_per_s());
    EXPECT_LT(r.pareto(i - 1).tokens_per_joule(),
              r.pareto(i).tokens_per_joule());
  }
  EXPECT_EQ(r.study_id(), 3);
  EXPECT_TRUE(r.final());
  EXPECT_EQ(r.history_db(), "/tmp/h.db");
  EXPECT_DOUBLE_EQ(r.gpu().peak_dense_tflops(),
                   w.cluster.gpu.peak_dense_tflops);
  EXPECT_DOUBLE_EQ(r.calibration().at("gemm_peak_efficiency"),
                   calibration.gemm_peak_efficiency);

  // JSON round trip (what the store keeps).
  absl::StatusOr<v1::Recommendation> back =
      RecommendationFromJson(RecommendationToJson(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*back, r));
}

}  // namespace
}  // namespace tessera::service
