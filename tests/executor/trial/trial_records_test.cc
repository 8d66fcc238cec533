// The trial records' summaries against hand computations, the packing
// round trip (bit-exact), and GatherRecords over a real in-process world of
// CPU backends.
#include "executor/trial/trial_records.h"

#include <cmath>
#include <limits>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "core/model_flops.h"
#include "executor/comm/run_ranks.h"
#include "executor/cpu/cpu_backend.h"
#include "gtest/gtest.h"

namespace tessera::executor {
namespace {

TrialShape Shape(int64_t ranks, int64_t gpus) {
  TrialShape t;
  t.model = *ModelPreset("tiny");
  t.ranks = ranks;
  t.gpus = gpus;
  t.global_batch = 8;
  t.seq_len = 32;
  t.warmup_steps = 1;
  return t;
}

TEST(TrialRecordsTest, StatusesByCode) {
  EXPECT_EQ(TrialStatusFor(absl::ResourceExhaustedError("x")),
            TrialStatus::kOom);
  EXPECT_EQ(TrialStatusFor(absl::DataLossError("x")), TrialStatus::kNan);
  EXPECT_EQ(TrialStatusFor(absl::DeadlineExceededError("x")),
            TrialStatus::kTimeout);
  EXPECT_EQ(TrialStatusFor(absl::InvalidArgumentError("x")),
            TrialStatus::kInvalid);
  EXPECT_EQ(TrialStatusFor(absl::FailedPreconditionError("x")),
            TrialStatus::kInvalid);
  EXPECT_EQ(TrialStatusFor(absl::InternalError("x")), TrialStatus::kCrash);
  EXPECT_EQ(TrialStatusFor(absl::AbortedError("x")), TrialStatus::kCrash);
}

TEST(TrialRecordsTest, Percentiles) {
  EXPECT_DOUBLE_EQ(Percentile({}, 0.5), 0);
  EXPECT_DOUBLE_EQ(Percentile({3, 1, 2}, 0.5), 2);
  EXPECT_DOUBLE_EQ(Percentile({1, 2}, 0.5), 1.5);
  EXPECT_DOUBLE_EQ(Percentile({1, 2, 3, 4, 5}, 0.1), 1.4);
  EXPECT_DOUBLE_EQ(Percentile({1, 2, 3, 4, 5}, 0.9), 4.6);
}

TEST(TrialRecordsTest, SummariseStepsByHand) {
  // Two ranks, one warm-up step and two measured ones.
  std::vector<RankRecord> ranks(2);
  ranks[0].steps = {
      {6.0, 9.0, 1.0, 0.5}, {5.0, 2.0, 0.4, 0.2}, {4.0, 3.0, 0.6, 0.4}};
  ranks[1].steps = {
      {6.0, 8.0, 2.0, 1.5}, {5.0, 2.5, 0.8, 0.6}, {4.0, 2.0, 0.2, 0.0}};
  ranks[0].peak_bytes = 100;
  ranks[1].peak_bytes = 200;
  TrialResult r;
  SummariseSteps(Shape(2, 2), ranks, /*peak_tflops_per_rank=*/10.0, r);
  EXPECT_EQ(r.steps, 2);
  EXPECT_EQ(r.loss, (std::vector<double>{6.0, 5.0, 4.0}));
  // A step lasts as long as its slowest rank.
  EXPECT_EQ(r.step_times_s, (std::vector<double>{9.0, 2.5, 3.0}));
  EXPECT_DOUBLE_EQ(r.step_time_s.median, 2.75);
  EXPECT_DOUBLE_EQ(r.step_time_s.p10, 2.55);
  EXPECT_DOUBLE_EQ(r.step_time_s.p90, 2.95);
  // Means over ranks, medians over steps: comm (0.6, 0.4), exposed (0.4,
  // 0.2), compute = step - exposed (2.1, 2.8).
  EXPECT_DOUBLE_EQ(r.comm_s, 0.5);
  EXPECT_DOUBLE_EQ(r.exposed_comm_s, 0.3);
  EXPECT_DOUBLE_EQ(r.compute_s, 2.45);
  EXPECT_DOUBLE_EQ(r.tokens_per_s, 8 * 32 / 2.75);
  EXPECT_DOUBLE_EQ(r.tokens_per_s_per_gpu, r.tokens_per_s / 2);
  const double flops = ModelFlopsPerStep(*ModelPreset("tiny"), 8, 32);
  EXPECT_DOUBLE_EQ(r.tflops_per_gpu, flops / 2.75 / 2 / 1e12);
  EXPECT_DOUBLE_EQ(r.mfu, r.tflops_per_gpu / 10.0);
  EXPECT_EQ(r.peak_memory_bytes, (std::vector<int64_t>{100, 200}));
}

TEST(TrialRecordsTest, SummariseStepsUsesOnlyStepsEveryRankRan) {
  std::vector<RankRecord> ranks(2);
  ranks[0].steps = {{1, 1, 0, 0}, {1, 1, 0, 0}, {1, 1, 0, 0}};
  ranks[1].steps = {{1, 1, 0, 0}};
  TrialResult r;
  SummariseSteps(Shape(2, 2), ranks, 1.0, r);
  EXPECT_EQ(r.loss.size(), 1u);
  EXPECT_EQ(r.steps, 0);  // the one common step is warm-up
  EXPECT_EQ(r.tokens_per_s, 0);
}

TEST(TrialRecordsTest, PowerFromEveryGpusEnergy) {
  std::vector<RankRecord> ranks(2);
  ranks[0].energy = EnergyRecord{600.0, 2.0};  // 300 W
  ranks[1].energy = EnergyRecord{400.0, 2.0};  // 200 W
  TrialResult r;
  SummarisePower(Shape(2, 2), ranks, /*measured_steps=*/5, r);
  ASSERT_TRUE(r.watts_per_gpu.has_value());
  EXPECT_DOUBLE_EQ(*r.watts_per_gpu, 250.0);
  ASSERT_TRUE(r.tokens_per_joule.has_value());
  EXPECT_DOUBLE_EQ(*r.tokens_per_joule, 8.0 * 32 * 5 / 1000.0);
}

TEST(TrialRecordsTest, PowerOfOneSharedGpu) {
  // Ranks as threads on one GPU: only rank 0 reports the device.
  std::vector<RankRecord> ranks(4);
  ranks[0].energy = EnergyRecord{100.0, 4.0};
  TrialResult r;
  SummarisePower(Shape(4, 1), ranks, 2, r);
  ASSERT_TRUE(r.watts_per_gpu.has_value());
  EXPECT_DOUBLE_EQ(*r.watts_per_gpu, 25.0);
  EXPECT_DOUBLE_EQ(*r.tokens_per_joule, 8.0 * 32 * 2 / 100.0);
}

TEST(TrialRecordsTest, PowerNotMeasuredOnSomeGpuMeansNoFigure) {
  std::vector<RankRecord> ranks(2);
  ranks[0].energy = EnergyRecord{600.0, 2.0};
  TrialResult r;
  SummarisePower(Shape(2, 2), ranks, 5, r);
  EXPECT_FALSE(r.watts_per_gpu.has_value());
  EXPECT_FALSE(r.tokens_per_joule.has_value());
  std::vector<RankRecord> none(2);
  SummarisePower(Shape(2, 2), none, 5, r);
  EXPECT_FALSE(r.watts_per_gpu.has_value());
}

TEST(TrialRecordsTest, PackingRoundTripsBitExactly) {
  RankRecord rec;
  rec.steps = {{std::log(512.0), 0.123456789, 1e-9, 0.0},
               {-0.0, std::numeric_limits<double>::infinity(), 3.5, 2.25}};
  rec.peak_bytes = int64_t{1} << 40;
  rec.energy = EnergyRecord{1234.5, 6.75};
  const std::vector<int32_t> words = PackRecord(rec, 2, 989.4);
  EXPECT_EQ(static_cast<int64_t>(words.size()), PackedRecordWords(2));
  double extra = 0;
  const RankRecord back = UnpackRecord(words.data(), 2, &extra);
  EXPECT_EQ(extra, 989.4);
  EXPECT_EQ(back.peak_bytes, rec.peak_bytes);
  ASSERT_TRUE(back.energy.has_value());
  EXPECT_EQ(back.energy->joules, 1234.5);
  EXPECT_EQ(back.energy->seconds, 6.75);
  ASSERT_EQ(back.steps.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.steps[i].loss, rec.steps[i].loss);
    EXPECT_EQ(back.steps[i].step_time_s, rec.steps[i].step_time_s);
    EXPECT_EQ(back.steps[i].comm_s, rec.steps[i].comm_s);
    EXPECT_EQ(back.steps[i].exposed_comm_s, rec.steps[i].exposed_comm_s);
  }
  rec.energy.reset();
  const RankRecord no_energy =
      UnpackRecord(PackRecord(rec, 2, 0).data(), 2, &extra);
  EXPECT_FALSE(no_energy.energy.has_value());
}

TEST(TrialRecordsTest, GatherRecordsOverAnInProcessWorld) {
  constexpr int kRanks = 3;
  std::vector<std::vector<RankRecord>> seen(kRanks);
  std::vector<double> rank0_extra(kRanks, 0);
  const std::vector<absl::Status> statuses =
      RunRanks(kRanks, [&](int rank, Communicator& world) -> absl::Status {
        CpuBackend backend({.blas_threads = 1});
        RankRecord mine;
        mine.peak_bytes = 1000 + rank;
        for (int i = 0; i < 4; ++i) {
          mine.steps.push_back({double(rank), 0.1 * i, 0.01 * rank, 0.0});
        }
        if (rank == 1) mine.energy = EnergyRecord{10.0 * rank, 1.0};
        absl::StatusOr<std::vector<RankRecord>> all = GatherRecords(
            world, backend, mine, 4, 100.0 + rank, &rank0_extra[rank]);
        if (!all.ok()) return all.status();
        seen[rank] = std::move(*all);
        return absl::OkStatus();
      });
  ASSERT_TRUE(FirstFailure(statuses).ok()) << FirstFailure(statuses);
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(rank0_extra[r], 100.0);
    ASSERT_EQ(seen[r].size(), static_cast<size_t>(kRanks));
    for (int from = 0; from < kRanks; ++from) {
      EXPECT_EQ(seen[r][from].peak_bytes, 1000 + from);
      ASSERT_EQ(seen[r][from].steps.size(), 4u);
      EXPECT_EQ(seen[r][from].steps[3].loss, double(from));
      EXPECT_EQ(seen[r][from].steps[2].comm_s, 0.01 * from);
      EXPECT_EQ(seen[r][from].energy.has_value(), from == 1);
    }
  }
}

}  // namespace
}  // namespace tessera::executor
