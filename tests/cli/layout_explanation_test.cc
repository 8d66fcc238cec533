// Why a layout ranks where it does (cli/layout_explanation.h) and `tessera
// explain`: the accounts add up to what the model predicted, the parts that
// separate two layouts are named largest first with their hand-computed
// differences, and explain's rank, memory and headroom agree with plan and
// predict.
#include "cli/layout_explanation.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cli/cli_test_util.h"

namespace tessera::cli {
namespace {

using nlohmann::json;

costmodel::Prediction Step(double compute, double tp, double dp, double pp,
                         double bubble) {
  costmodel::Prediction p;
  p.compute_s = compute;
  p.tp_exposed_s = tp;
  p.dp_exposed_s = dp;
  p.pp_exposed_s = pp;
  p.exposed_comm_s = tp + dp + pp;
  p.bubble_s = bubble;
  p.step_time_s = compute + p.exposed_comm_s + bubble;
  return p;
}

TEST(LayoutExplanationTest, StepAccountNamesEachExposedKindLargestFirst) {
  const costmodel::Prediction p = Step(1.0, 0.05, 0.15, 0, 0.034);
  EXPECT_EQ(StepAccount(p),
            "1.2340 s = compute 1.0000 + exposed comm 0.2000 (dp 0.1500, tp "
            "0.0500) + bubble 0.0340");
  EXPECT_EQ(StepAccount(Step(1.0, 0, 0, 0, 0)),
            "1.0000 s = compute 1.0000 + exposed comm 0.0000 + bubble 0.0000");
  // The compute's slowdown beside hidden collectives is said within it.
  costmodel::Prediction slowed = Step(1.0, 0, 0.01, 0, 0);
  slowed.overlap_slowdown_s = 0.05;
  EXPECT_EQ(StepAccount(slowed),
            "1.0100 s = compute 1.0000 (0.0500 of it slowed by hidden comm) "
            "+ exposed comm 0.0100 (dp 0.0100) + bubble 0.0000");
  // So is the GPU's wait for its host.
  slowed.host_wait_s = 0.2;
  EXPECT_EQ(StepAccount(slowed),
            "1.0100 s = compute 1.0000 (0.0500 of it slowed by hidden comm, "
            "0.2000 of it waiting for the host) + exposed comm 0.0100 (dp "
            "0.0100) + bubble 0.0000");
}

TEST(LayoutExplanationTest, WhatSeparatesGivesTheDifferencesLargestFirst) {
  // Best: 1.0 s of compute. Other: +0.05 s tp, +0.10 s bubble, -0.02 s
  // compute, +0.001 s dp (0.1% of the best step: below the 0.5% shown).
  const costmodel::Prediction best = Step(1.0, 0, 0, 0, 0);
  costmodel::Prediction other = Step(0.98, 0.05, 0.001, 0, 0.10);
  other.memory.total_bytes = 10.0 * (1 << 30);
  EXPECT_EQ(WhatSeparates(other, best),
            "+13.1% step time vs the best: bubble +0.1 s, exposed tp comm "
            "+0.05 s, compute -0.02 s; memory +10.0 GiB per GPU");
  EXPECT_EQ(WhatSeparates(best, best), "the same step time as the best");
}

TEST(ExplainCommandTest, RankAndNumbersAgreeWithPlanAndPredict) {
  const std::vector<std::string> spec = {"--spec", ExampleSpecPath()};
  const CliRun plan = RunCli(Concat({"plan", "--json", "--top", "5"}, spec));
  ASSERT_EQ(plan.status, 0) << plan.err;
  const json candidates = json::parse(plan.out)["candidates"];
  ASSERT_GE(candidates.size(), 5u);
  // The fifth candidate is rank 5 (ties keep the search's order), with the
  // prediction predict gives it.
  std::string layout;
  for (const auto& [key, value] : candidates[4]["layout"].items()) {
    if (!layout.empty()) layout += ",";
    layout += key + "=" +
              (value.is_boolean()  ? std::string(value.get<bool>() ? "1" : "0")
               : value.is_string() ? value.get<std::string>()
                                   : value.dump());
  }
  const CliRun explain = RunCli(Concat({"explain", layout, "--json"}, spec));
  ASSERT_EQ(explain.status, 0) << explain.err;
  const json e = json::parse(explain.out);
  EXPECT_EQ(e["rank"], 5) << layout;
  EXPECT_EQ(e["prediction"], candidates[4]["prediction"]);
  EXPECT_EQ(e["best"]["layout"], candidates[0]["layout"]);
  EXPECT_EQ(e["within_error_of_best"], true);  // plan says all 5 are
  const CliRun predict =
      RunCli(Concat({"predict", "--layout", layout, "--json"}, spec));
  ASSERT_EQ(predict.status, 0) << predict.err;
  EXPECT_EQ(json::parse(predict.out)["prediction"], e["prediction"]);
  // The exposed parts add up to the exposed communication.
  const json& p = e["prediction"];
  EXPECT_NEAR(
      p["tp_exposed_s"].get<double>() + p["cp_exposed_s"].get<double>() +
          p["pp_exposed_s"].get<double>() + p["dp_exposed_s"].get<double>(),
      p["exposed_comm_s"].get<double>(), 1e-12);

  const CliRun text = RunCli(Concat({"explain", layout}, spec));
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("\nrank:           5 of "), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("MFU "), std::string::npos);
  EXPECT_NE(text.out.find("\nMFU: model FLOPs (no recomputation) per second "
                          "over h100-sxm's dense bf16 peak, 989 TFLOP/s per "
                          "GPU\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("; within the model's error"), std::string::npos);
  EXPECT_NE(text.out.find("(5%, the default; --headroom to change)"),
            std::string::npos);

  // plan explains its top three, each after the first against rank 1.
  const CliRun table = RunCli(Concat({"plan"}, spec));
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("why the top 3 layouts"), std::string::npos);
  size_t vs = 0, at = 0;
  while ((at = table.out.find("\n   vs 1   ", at)) != std::string::npos) {
    ++vs;
    ++at;
  }
  EXPECT_EQ(vs, 2u) << table.out;
}

TEST(ExplainCommandTest, HeadroomDecidesWhatFits) {
  const std::vector<std::string> spec = {"--spec", ExampleSpecPath()};
  const std::string layout = "tp=1,zero=2,micro_batch=2";
  const CliRun fits =
      RunCli(Concat({"explain", layout, "--json", "--headroom", "0"}, spec));
  ASSERT_EQ(fits.status, 0) << fits.err;
  const json e = json::parse(fits.out);
  ASSERT_EQ(e["feasible"], true);
  EXPECT_EQ(e["headroom_gib"], 0.0);
  const double need_gib = e["prediction"]["memory_gib_per_gpu"].get<double>();
  const double usable_gib = e["usable_memory_gib"].get<double>();
  // A headroom just under the spare memory keeps it; just over, it is out.
  const double spare = usable_gib - need_gib;
  const CliRun inside = RunCli(Concat(
      {"explain", layout, "--json", "--headroom", std::to_string(spare - 0.01)},
      spec));
  EXPECT_EQ(json::parse(inside.out)["feasible"], true) << inside.out;
  const CliRun outside = RunCli(Concat(
      {"explain", layout, "--headroom", std::to_string(spare + 0.01)}, spec));
  ASSERT_EQ(outside.status, 0) << outside.err;
  EXPECT_NE(outside.out.find("infeasible: memory: needs "), std::string::npos)
      << outside.out;
  EXPECT_NE(outside.out.find(" GiB headroom)"), std::string::npos);
  // As a fraction: the same bytes.
  const CliRun percent =
      RunCli(Concat({"explain", layout, "--json", "--headroom", "10%"}, spec));
  EXPECT_NEAR(json::parse(percent.out)["headroom_gib"].get<double>(),
              0.1 * (usable_gib), 1e-9);
  // Bad values name the flag.
  for (const std::string bad : {"-1", "100%", "8q", "500"}) {
    const CliRun r =
        RunCli(Concat({"explain", layout, "--headroom", bad}, spec));
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_NE(r.err.find("--headroom"), std::string::npos) << bad << r.err;
  }
}

}  // namespace
}  // namespace tessera::cli
