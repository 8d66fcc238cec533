#include "core/trial_result.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(TrialResultTest, RoundTripKeepsEveryField) {
  TrialResult r;
  r.status = TrialStatus::kOk;
  r.layout = Layout{.tp = 2,
                    .pp = 2,
                    .dp = 2,
                    .zero = 3,
                    .shard_group = 2,
                    .micro_batch = 1,
                    .grad_accum = 8};
  r.backend = "cpu";
  r.model = "tiny";
  r.device = "cpu (8 threads)";
  r.ranks = 8;
  r.global_batch = 16;
  r.seq_len = 128;
  r.warmup_steps = 3;
  r.steps = 10;
  r.step_time_s = {0.5, 0.4, 0.7};
  r.tokens_per_s = 4096;
  r.tokens_per_s_per_gpu = 512;
  r.tflops_per_gpu = 0.01;
  r.mfu = 0.2;
  r.peak_tflops = 0.05;
  r.peak_tflops_source = "measured sgemm";
  r.peak_memory_bytes = {1, 2, 3, 4, 5, 6, 7, 8};
  r.compute_s = 0.3;
  r.comm_s = 0.2;
  r.exposed_comm_s = 0.2;
  r.loss = {6.2, 6.1};
  r.step_times_s = {0.6, 0.5};
  const nlohmann::json j = TrialResultToJson(r);
  EXPECT_TRUE(j["watts_per_gpu"].is_null());
  EXPECT_EQ(j["status"], "ok");
  absl::StatusOr<TrialResult> back = TrialResultFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(TrialResultToJson(*back), j);
  EXPECT_FALSE(back->watts_per_gpu.has_value());

  r.watts_per_gpu = 650;
  r.tokens_per_joule = 1.5;
  back = TrialResultFromJson(TrialResultToJson(r));
  ASSERT_TRUE(back.ok());
  EXPECT_DOUBLE_EQ(*back->watts_per_gpu, 650);
  EXPECT_DOUBLE_EQ(*back->tokens_per_joule, 1.5);
}

TEST(TrialResultTest, NanLossRoundTrips) {
  TrialResult r;
  r.status = TrialStatus::kNan;
  r.reason = "loss is nan at step 2";
  r.loss = {6.2, 6.1, std::nan(""), std::numeric_limits<double>::infinity()};
  const nlohmann::json j = TrialResultToJson(r);
  absl::StatusOr<TrialResult> back =
      TrialResultFromJson(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->loss.size(), 4u);
  EXPECT_DOUBLE_EQ(back->loss[1], 6.1);
  EXPECT_TRUE(std::isnan(back->loss[2]));
  EXPECT_TRUE(std::isnan(back->loss[3]));  // not finite: null: NaN
  EXPECT_FALSE(
      TrialResultFromJson({{"status", "ok"}, {"loss", {1, "x"}}}).ok());
}

TEST(TrialResultTest, ErrorsNameTheField) {
  EXPECT_NE(TrialResultFromJson({{"status", "exploded"}})
                .status()
                .message()
                .find("trial.status"),
            absl::string_view::npos);
  EXPECT_NE(TrialResultFromJson({{"reason", "x"}})
                .status()
                .message()
                .find("trial.status"),
            absl::string_view::npos);
  EXPECT_NE(TrialResultFromJson({{"status", "ok"}, {"steps", "ten"}})
                .status()
                .message()
                .find("trial.steps"),
            absl::string_view::npos);
  EXPECT_NE(TrialResultFromJson({{"status", "ok"}, {"layout", {{"tp", 0}}}})
                .status()
                .message()
                .find("trial.layout"),
            absl::string_view::npos);
}

}  // namespace
}  // namespace tessera
