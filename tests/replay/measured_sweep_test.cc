// Reading measured sweeps: the usp_sweep.json format, published runs and
// `tessera trials -o json`, grouping, merging, and errors that name the row
// and the field.
#include "replay/measured_sweep.h"

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "proto/spec_json.h"

namespace tessera::replay {
namespace {

using Json = nlohmann::json;

Json Row(int64_t gpus, int64_t tp, int64_t pp, int64_t dp, int64_t mb,
         const std::string& zero, const std::string& status,
         double tokens = 0, const std::string& notes = "") {
  Json r = {{"source", "hf-space nanotron/ultrascale-playbook"},
            {"model", "nanotron-llama-1B"},
            {"layers", 16},
            {"hidden", 2048},
            {"heads", 32},
            {"kv_heads", 32},
            {"ffn", 8192},
            {"vocab", 131072},
            {"seq_len", 4096},
            {"gpu", "H100-SXM-80GB"},
            {"gpus", gpus},
            {"gpus_per_node", 8},
            {"global_batch_seqs", 256},
            {"tp", tp},
            {"pp", pp},
            {"vpp", nullptr},
            {"cp", 1},
            {"dp", dp},
            {"zero_or_fsdp", zero},
            {"micro_batch", mb},
            {"recompute", nullptr},
            {"measured_tokens_per_s_per_gpu",
             tokens > 0 ? Json(tokens) : Json(nullptr)},
            {"precision", "bf16"},
            {"notes", "tied embeddings; " + notes},
            {"status", status}};
  return r;
}

Json SmallSweep() {
  return Json{
      {"collective_busbw_gbs_256MiB",
       {{"nodes", {1, 2}}, {"all_gather", {250.0, 185.0}}}},
      {"rows",
       {Row(8, 1, 1, 8, 1, "zero0", "ok", 39273,
            "peak GPU memory 36.7 GB"),
        Row(8, 2, 1, 4, 2, "zero1", "ok", 30000),
        Row(8, 1, 1, 8, 1, "zero0", "ok", 39000),
        Row(8, 1, 2, 4, 4, "zero1", "failed"),
        Row(8, 8, 2, 1, 1, "zero0", "failed"),
        Row(16, 1, 1, 16, 1, "zero0", "ok", 38000),
        Row(16, 1, 2, 8, 2, "zero1", "ok", 37000)}}};
}

TEST(MeasuredSweepTest, GroupsByWorkloadMergesRepeatsAndSkipsWhatCannotRun) {
  absl::StatusOr<MeasuredSweep> s =
      ParseMeasuredSweep(SmallSweep().dump(), "small.json", {});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->format, "sweep");
  ASSERT_EQ(s->groups.size(), 2u);
  const SweepGroup& one = s->groups[0];
  EXPECT_EQ(one.name, "nanotron-llama-1B 1x8");
  EXPECT_EQ(one.workload.training.stack, "nanotron");
  EXPECT_EQ(one.workload.cluster.nodes, 1);
  EXPECT_TRUE(one.workload.model.tie_embeddings);
  ASSERT_EQ(one.rows.size(), 3u);
  // The repeated layout once, with the mean of its two measurements.
  EXPECT_EQ(one.rows[0].index, 0);
  EXPECT_DOUBLE_EQ(one.rows[0].tokens_per_s_per_gpu, (39273 + 39000) / 2.0);
  ASSERT_TRUE(one.rows[0].peak_memory_bytes.has_value());
  EXPECT_NEAR(*one.rows[0].peak_memory_bytes, 36.7 * (1 << 30), 1);
  // Tensor parallelism runs with sequence parallelism; grad_accum derived.
  EXPECT_TRUE(one.rows[1].layout.sp);
  EXPECT_EQ(one.rows[1].layout.grad_accum, 256 / (2 * 4));
  EXPECT_EQ(one.rows[2].outcome, TrialStatus::kOom);
  EXPECT_DOUBLE_EQ(one.BestTokensPerSPerGpu(), (39273 + 39000) / 2.0);
  EXPECT_EQ(one.OkRows(), 2);
  // tp 8 x pp 2 needs 16 GPUs of the 8.
  ASSERT_EQ(s->skipped.size(), 1u);
  EXPECT_EQ(s->skipped[0].rfind("row 4: ", 0), 0u) << s->skipped[0];
  // The cluster's collectives ride with every group.
  ASSERT_EQ(one.collectives.size(), 2u);
  EXPECT_EQ(one.collectives[1].nodes, 2);
  EXPECT_EQ(one.collectives[1].gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(one.collectives[1].bytes, 256.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(one.collectives[1].busbw_gbs, 185);
  EXPECT_EQ(s->groups[1].name, "nanotron-llama-1B 2x8");
  EXPECT_EQ(s->groups[1].rows.size(), 2u);
}

TEST(MeasuredSweepTest, FailedRowsAsAskedAndSmallGroupsLeftOutSaying) {
  SweepReadOptions o;
  o.failed_as = TrialStatus::kCrash;
  o.min_ok_rows = 3;
  absl::StatusOr<MeasuredSweep> s =
      ParseMeasuredSweep(SmallSweep().dump(), "small.json", o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->groups.empty());
  ASSERT_EQ(s->skipped.size(), 3u);
  EXPECT_NE(s->skipped[1].find("fewer than 3"), std::string::npos);
  o.min_ok_rows = 2;
  s = ParseMeasuredSweep(SmallSweep().dump(), "small.json", o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->groups[0].rows[2].outcome, TrialStatus::kCrash);
}

TEST(MeasuredSweepTest, ErrorsNameTheFileTheRowAndTheField) {
  Json bad = SmallSweep();
  bad["rows"][2].erase("gpus");
  EXPECT_EQ(ParseMeasuredSweep(bad.dump(), "s.json", {}).status().message(),
            "s.json: row 2: gpus: required, an integer");
  bad = SmallSweep();
  bad["rows"][1]["status"] = "great";
  EXPECT_EQ(ParseMeasuredSweep(bad.dump(), "s.json", {}).status().message(),
            "s.json: row 1: status: \"great\" is not ok, failed, oom, crash, "
            "timeout or nan");
  bad = SmallSweep();
  bad["rows"][0]["zero_or_fsdp"] = "fsdp";
  EXPECT_NE(ParseMeasuredSweep(bad.dump(), "s.json", {})
                .status()
                .message()
                .find("row 0: zero_or_fsdp"),
            std::string::npos);
  bad = SmallSweep();
  bad["rows"][0]["source"] = "my cluster";
  EXPECT_NE(ParseMeasuredSweep(bad.dump(), "s.json", {})
                .status()
                .message()
                .find("give --stack"),
            std::string::npos);
  SweepReadOptions with_stack;
  with_stack.stack = "nanotron";
  EXPECT_TRUE(ParseMeasuredSweep(bad.dump(), "s.json", with_stack).ok());
  bad = SmallSweep();
  bad["rows"][1]["measured_tokens_per_s_per_gpu"] = nullptr;
  EXPECT_NE(ParseMeasuredSweep(bad.dump(), "s.json", {})
                .status()
                .message()
                .find("row 1: measured_tokens_per_s_per_gpu"),
            std::string::npos);
  EXPECT_EQ(ParseMeasuredSweep("{", "s.json", {}).status().message(),
            "s.json: not valid JSON");
  EXPECT_FALSE(ParseMeasuredSweep("{\"rows\": []}", "s.json", {}).ok());
  EXPECT_TRUE(absl::IsNotFound(
      ReadMeasuredSweep("/nonexistent/sweep.json", {}).status()));
}

TEST(MeasuredSweepTest, PastTrialsGroupByStudyAndWorld) {
  v1::StudySpec ran;
  ran.mutable_model()->set_preset("tiny");
  ran.mutable_cluster()->mutable_gpu()->set_preset("h100-sxm");
  ran.mutable_cluster()->set_nodes(1);
  ran.mutable_cluster()->set_gpus_per_node(2);
  ran.mutable_training()->set_global_batch(8);
  ran.mutable_training()->set_seq_len(128);
  ran.mutable_training()->set_stack("tessera");
  const Json spec = Json::parse(StudySpecToJson(ran));
  auto trial = [&](int64_t id, int64_t mb, const std::string& state,
                   double tokens) {
    Json t = {{"id", id},
              {"study_id", 7},
              {"state", state},
              {"reason", state == "ok" ? "" : "out of memory"},
              {"layout",
               {{"tp", 1}, {"pp", 1}, {"dp", 2}, {"micro_batch", mb}}}};
    if (state == "ok") {
      t["measured"] = {{"tokens_per_s_per_gpu", tokens},
                       {"peak_memory_bytes", 1 << 20}};
      t["ran"] = spec;
    }
    return t;
  };
  const Json trials = {trial(1, 1, "ok", 100), trial(2, 2, "ok", 120),
                       trial(3, 4, "oom", 0), trial(4, 1, "cancelled", 0)};
  absl::StatusOr<MeasuredSweep> s =
      ParseMeasuredSweep(trials.dump(), "past.json", {});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->format, "trials");
  ASSERT_EQ(s->groups.size(), 1u);
  EXPECT_EQ(s->groups[0].name, "study 7 1x2");
  ASSERT_EQ(s->groups[0].rows.size(), 3u);
  EXPECT_EQ(s->groups[0].rows[2].outcome, TrialStatus::kOom);
  EXPECT_EQ(s->groups[0].rows[2].failure_reason, "out of memory");
  EXPECT_DOUBLE_EQ(s->groups[0].BestTokensPerSPerGpu(), 120);
}

TEST(MeasuredSweepTest, ReadsTheSharedSweepAndThePublishedRuns) {
  absl::StatusOr<MeasuredSweep> usp = ReadMeasuredSweep(
      std::string(TESSERA_SOURCE_DIR) + "/../shared/data/usp_sweep.json", {});
  if (absl::IsNotFound(usp.status())) {
    GTEST_SKIP() << "../shared/data/usp_sweep.json is not beside the tree";
  }
  ASSERT_TRUE(usp.ok()) << usp.status();
  // usp_sweep.md: 8 groups (1B, 8B x 1, 2, 4, 8 nodes); its best per group.
  ASSERT_EQ(usp->groups.size(), 8u);
  EXPECT_EQ(usp->groups[0].name, "nanotron-llama-1B 1x8");
  EXPECT_DOUBLE_EQ(usp->groups[0].BestTokensPerSPerGpu(), 40150);
  EXPECT_EQ(usp->groups[0].collectives.size(), 12u);
  absl::StatusOr<MeasuredSweep> published = ReadMeasuredSweep(
      std::string(TESSERA_SOURCE_DIR) + "/tests/data/measured_published.json",
      {});
  ASSERT_TRUE(published.ok()) << published.status();
  EXPECT_EQ(published->format, "published");
  EXPECT_GE(published->groups.size(), 2u);
  for (const SweepGroup& g : published->groups) EXPECT_GE(g.OkRows(), 2);
}

}  // namespace
}  // namespace tessera::replay
