// Which stack a trial measured, and so what it calibrates: Tessera's
// executor (backends cpu, cuda) measures the "tessera" stack in bf16,
// whatever the study's stack; a command trial measures the study's own stack,
// options and precision.
#include "service/recalibration.h"

#include "gtest/gtest.h"

namespace tessera::service {
namespace {

Workload StudyOf(const std::string& stack) {
  Workload w{*ModelPreset("tiny"), MakeCluster(*GpuPreset("h100-sxm"), 1, 2),
             TrainingConfig{.global_batch = 8, .seq_len = 64}};
  w.training.stack = stack;
  w.training.stack_options = {"compile"};
  w.training.precision = Precision::kFp8;
  return w;
}

db::Trial OkTrial(const std::string& backend) {
  db::Trial t;
  t.id = 3;
  t.layout.dp = 2;
  t.layout.micro_batch = 2;
  t.layout.grad_accum = 2;
  t.layout.shard_group = 1;
  t.gang_size = 1;
  t.status = db::TrialState::kOk;
  db::TrialMeasurement m;
  m.backend = backend;
  m.steps = 4;
  m.step_time_s = {0.5, 0.4, 0.6};
  m.compute_s = 0.3;
  m.comm_s = 0.2;
  m.exposed_comm_s = 0.1;
  m.peak_memory_bytes = int64_t{1} << 30;
  t.measured = m;
  return t;
}

TEST(RecalibrationTest, TheStackATrialMeasuredIsItsBackendsOrTheStudys) {
  EXPECT_EQ(TrialStackOf("cpu", "torchtitan"), "tessera");
  EXPECT_EQ(TrialStackOf("cuda", "torchtitan"), "tessera");
  EXPECT_EQ(TrialStackOf("command", "torchtitan"), "torchtitan");
  EXPECT_EQ(TrialStackOf("", "torchtitan"), "tessera");
  EXPECT_EQ(TrialStackOf("rocm", "torchtitan"), "tessera");
}

TEST(RecalibrationTest, ACommandTrialRanTheStudysStackOptionsAndPrecision) {
  const Workload study = StudyOf("torchtitan");
  absl::StatusOr<Workload> ran = WorkloadTrialRan(OkTrial("command"), study, 0);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(ran->training.stack, "torchtitan");
  EXPECT_EQ(ran->training.stack_options, std::vector<std::string>{"compile"});
  EXPECT_EQ(ran->training.precision, Precision::kFp8);
  ran = WorkloadTrialRan(OkTrial("cuda"), study, 0);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(ran->training.stack, "tessera");
  EXPECT_TRUE(ran->training.stack_options.empty());
  EXPECT_EQ(ran->training.precision, Precision::kBf16);
}

TEST(RecalibrationTest, ACommandSampleCarriesOnlyWhatItsFrameworkReported) {
  const Workload study = StudyOf("torchtitan");
  absl::StatusOr<costmodel::CalibrationSample> cuda =
      SampleOfTrial(OkTrial("cuda"), study, 0);
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  EXPECT_TRUE(cuda->comm_s.has_value());
  EXPECT_TRUE(cuda->peak_memory_bytes.has_value());
  absl::StatusOr<costmodel::CalibrationSample> command =
      SampleOfTrial(OkTrial("command"), study, 0);
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_DOUBLE_EQ(command->step_time_s, 0.5);
  EXPECT_EQ(command->workload.training.stack, "torchtitan");
  EXPECT_FALSE(command->comm_s.has_value());
  EXPECT_FALSE(command->exposed_comm_s.has_value());
  EXPECT_FALSE(command->peak_memory_bytes.has_value());
}

TEST(RecalibrationTest, AFitOfTheStudysOwnStackIsUsedWhole) {
  Workload study = StudyOf("torchtitan");
  study.training.precision = Precision::kBf16;
  costmodel::Calibration fit;
  fit.elementwise_traffic_factor = 1.234;  // a stack coefficient
  // A fit of Tessera's executor lends only its hardware coefficients...
  EXPECT_NE(StudyCalibration(study, fit, nullptr).elementwise_traffic_factor,
            1.234);
  // ...a fit of the study's own stack (command trials) is the calibration.
  EXPECT_DOUBLE_EQ(StudyCalibration(study, fit, nullptr, "torchtitan")
                       .elementwise_traffic_factor,
                   1.234);
}

}  // namespace
}  // namespace tessera::service
